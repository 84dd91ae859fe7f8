"""The fetcher's pure parts: address classification, charset decoding, sniffing, robots rules, decoding, policy."""

from __future__ import annotations

import codecs
import zlib
from ipaddress import ip_address

import pytest
from pydantic import ValidationError

from core.retry import parse_retry_after as _retry_after
from core.settings import load_settings
from scrapers.charset import decode_body, sniff_binary
from scrapers.fetch import Fetcher, FetchPolicy, _BodyDecoder
from scrapers.net_guard import blocked_reason
from scrapers.robots import product_token, rules_from_status, unreachable
from scrapers.settings import FetchSettings

JA = "日本語のテキストです。ひらがなとカタカナと漢字。"


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd00:ec2::254",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "2002:a00:1::",
        "64:ff9b::a00:1",
    ],
)
def test_non_public_addresses_are_blocked(address: str) -> None:
    assert blocked_reason(ip_address(address))


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808", "::ffff:8.8.8.8"]
)
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ip_address(address)) is None


def test_metadata_addresses_are_named() -> None:
    assert "metadata" in (blocked_reason(ip_address("169.254.169.254")) or "")
    assert "metadata" in (blocked_reason(ip_address("fd00:ec2::254")) or "")


@pytest.mark.parametrize(
    ("body", "header", "encoding"),
    [
        (codecs.BOM_UTF16_LE + JA.encode("utf-16-le"), None, "utf-16-le"),
        (codecs.BOM_UTF8 + JA.encode(), "shift_jis", "utf-8"),  # a BOM beats the header (WHATWG)
        (JA.encode("cp932"), "Shift_JIS", "cp932"),
        (JA.encode("euc_jp"), "EUC-JP", "euc_jp"),
        (b"<meta charset='euc-jp'>" + JA.encode("euc_jp"), None, "euc_jp"),
        (b"<?xml version='1.0' encoding='Shift_JIS'?>" + JA.encode("cp932"), None, "cp932"),
        (JA.encode("cp932"), None, "cp932"),
        (JA.encode("euc_jp"), None, "euc_jp"),
        (JA.encode("cp932"), "utf-8", "cp932"),  # a wrong declaration falls through to detection
        (JA.encode() * 100 + b"\xff", None, "utf-8"),  # one stray byte does not make a UTF-8 page Japanese-legacy
    ],
)
def test_decode_body(body: bytes, header: str | None, encoding: str) -> None:
    text, codec = decode_body(body, header)
    assert codec == encoding and JA in text


def test_latin1_label_decodes_as_windows_1252() -> None:
    assert decode_body("caf\u00e9 \u20ac".encode("cp1252"), "iso-8859-1") == ("caf\u00e9 \u20ac", "cp1252")


@pytest.mark.parametrize(
    ("head", "binary"),
    [
        (b"%PDF-1.7\n", True),
        (b"PK\x03\x04rest", True),
        (b"<html>\x00</html>", True),
        (b"<html>ok</html>", False),
        (codecs.BOM_UTF16_LE + "<html>".encode("utf-16-le"), False),
    ],
)
def test_sniff_binary(head: bytes, binary: bool) -> None:
    assert bool(sniff_binary(head)) is binary


def test_robots_status_policy() -> None:
    agent = product_token("MAGI-Cluster-Research/0.1 (+https://x; research bot)")
    assert agent == "MAGI-Cluster-Research"
    parsed = rules_from_status(200, b"User-agent: magi-cluster-research\nDisallow: /x\n")
    assert not parsed.allows("https://a.example/x/1", agent) and parsed.allows("https://a.example/y", agent)
    for status in (404, 403, 410):
        assert rules_from_status(status, b"").allows("https://a.example/x", agent)
    for status in (429, 500, 503):
        assert not rules_from_status(status, b"").allows("https://a.example/x", agent)
    assert not unreachable("timeout").allows("https://a.example/", agent)


@pytest.mark.parametrize("wbits", [zlib.MAX_WBITS, -zlib.MAX_WBITS])
def test_deflate_with_and_without_zlib_header(wbits: int) -> None:
    z = zlib.compressobj(6, zlib.DEFLATED, wbits)
    data = z.compress(JA.encode() * 50) + z.flush()
    decoder = _BodyDecoder("deflate", "u")
    assert b"".join(decoder.decode(data[:10])) + b"".join(decoder.decode(data[10:])) == JA.encode() * 50


def test_gzip_members_and_bounded_steps() -> None:
    def member(data: bytes) -> bytes:
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        return z.compress(data) + z.flush()

    decoder = _BodyDecoder("gzip", "u")
    pieces = list(decoder.decode(member(bytes(1 << 20)) + member(b"tail")))
    assert all(len(p) <= 64 * 1024 for p in pieces) and b"".join(pieces) == bytes(1 << 20) + b"tail"


def test_retry_after_parsing() -> None:
    assert _retry_after("7") == 7.0
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: retry now
    assert _retry_after("soon") is None and _retry_after(None) is None


async def test_policy_from_settings_and_overrides() -> None:
    settings = load_settings(
        overrides={"fetch": {"allow_private": True, "retries": 4, "max_bytes": 123_456, "respect_robots": False}}
    )
    policy = FetchPolicy.of(FetchSettings.of(settings))
    assert policy.allow_private and policy.retries == 4 and not policy.respect_robots
    assert policy.max_bytes == policy.max_decoded_bytes == 123_456
    assert policy.timeout_s == FetchSettings.of(settings).timeout_s
    assert policy.politeness_delay_s == FetchSettings.of(settings).politeness_delay_s
    fetcher = Fetcher(policy=policy, max_bytes=1000, allow_networks=["192.0.2.0/24"])
    await fetcher.aclose()
    assert fetcher.policy.max_bytes == 1000 and fetcher.policy.allow_networks == ("192.0.2.0/24",)
    with pytest.raises(ValidationError):
        FetchPolicy(allow_networks=("not-a-network",))
