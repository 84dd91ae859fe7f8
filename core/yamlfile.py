"""Reading YAML files with one kind of error, keeping where each value was written.

The parsed document keeps PyYAML's node tree next to the plain data, so a later check (a pydantic
model in :mod:`core.policy`, the corpus manifest) can say on which line a bad value sits.
Every failure is a :class:`ConfigError` naming the file, the line and column when known, and the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from core.errors import ConfigError


@dataclass(frozen=True)
class YamlDocument:
    """A parsed file: ``data`` as ``yaml.safe_load`` returns it, ``root`` the node tree it came from."""

    path: Path
    data: Any
    root: yaml.Node | None

    def position(self, loc: Sequence[int | str]) -> tuple[int, int] | None:
        """1-based (line, column) of the deepest node on the key path ``loc`` that exists in the file.

        Parts that do not name a key or an index (pydantic's union tags, a missing key) are skipped,
        so a missing key points at the mapping that lacks it.
        """
        node = self.root
        if node is None:
            return None
        mark = node.start_mark
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                hit = next(
                    ((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)), None
                )
                if hit is not None:
                    mark, node = hit[0].start_mark, hit[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                node = node.value[part]
                mark = node.start_mark
        return mark.line + 1, mark.column + 1


def where(path: Path | str, position: tuple[int, int] | None) -> str:
    """``file, line L, column C`` (or just the file) for error messages."""
    return f"{path}, line {position[0]}, column {position[1]}" if position else str(path)


def parse_yaml(text: str, path: Path, what: str) -> YamlDocument:
    """Parse ``text`` (the contents of ``path``); a syntax error names the parser's line and column."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        position = (mark.line + 1, mark.column + 1) if mark is not None else None
        problem = "; ".join(p for p in (exc.context, exc.problem) if p)
        raise ConfigError(f"{what} {where(path, position)}: not valid YAML ({problem}); fix the syntax there") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {path} is not valid YAML ({exc}); fix the syntax") from None
    finally:
        loader.dispose()
    return YamlDocument(path=path, data=data, root=root)


def read_yaml_document(path: Path, what: str) -> YamlDocument:
    """Read and parse ``path``; unreadable, non-UTF-8 or malformed files are ConfigErrors naming ``what``."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"cannot read {what} {path}: {exc.strerror or exc}; check that the file exists and is readable"
        ) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"{what} {where(path, (line, column))}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); "
            "save the file as UTF-8"
        ) from None
    return parse_yaml(text, path, what)


def read_yaml(path: Path, what: str) -> Any:
    """Parsed YAML of ``path`` (as ``yaml.safe_load`` returns it); errors as in :func:`read_yaml_document`."""
    return read_yaml_document(path, what).data


__all__ = [
    "YamlDocument",
    "parse_yaml",
    "read_yaml",
    "read_yaml_document",
    "where",
]
