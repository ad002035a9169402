"""The operator's configuration: `TOOLSEARCH_OPERATOR_*` environment variables, set by the chart."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class OperatorConfig(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TOOLSEARCH_OPERATOR_", extra="forbid", frozen=True)

    webhook_address: str = Field("0.0.0.0", description="Address the admission webhook listens on.")
    webhook_port: int = Field(9443, ge=1, le=65535, description="Port the admission webhook listens on.")
    webhook_hostnames: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["localhost"],
        description="Comma-separated names (or IPs) the API server uses to reach the webhook; the "
        "self-signed certificate is made for them, e.g. <service>.<namespace>.svc.",
    )
    webhook_configuration: str = Field(
        "",
        description="Name of the MutatingWebhookConfiguration whose caBundle the operator keeps "
        "(self-signed mode).",
    )
    tls: Literal["self-signed", "mounted"] = Field(
        "self-signed",
        description="self-signed: make a certificate at start-up and publish it as the caBundle; "
        "mounted: serve tls.crt/tls.key from cert_dir (cert-manager injects the caBundle).",
    )
    cert_dir: Path = Field(
        Path("/tmp/toolsearch-webhook"), description="Where the webhook certificate is written or mounted."
    )
    sidecar_defaults: dict[str, str] = Field(
        default_factory=dict,
        description="JSON object of toolsearch.dev/* annotations applied to every injected proxy unless "
        'the pod sets its own, e.g. {"toolsearch.dev/image": "…"}.',
    )

    @field_validator("webhook_hostnames", mode="before")
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value
