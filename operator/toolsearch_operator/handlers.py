"""kopf handlers: thin wiring from cluster events to the pure functions of this package.

Run with `kopf run --standalone --all-namespaces -m toolsearch_operator.handlers`.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import kopf

from toolsearch_operator.annotations import INJECT, AnnotationError, sidecar_spec
from toolsearch_operator.config import OperatorConfig
from toolsearch_operator.overlay import parameters_patch
from toolsearch_operator.patch import injection_patch
from toolsearch_operator.tls import mounted_certificate, webhooks_with_ca_bundle, write_self_signed

INJECT_WEBHOOK = "inject-sidecar"
"""Handler id, and so the URL path (`/inject-sidecar`) the webhook configuration must call."""


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    config = OperatorConfig()
    try:
        sidecar_spec({}, config.sidecar_defaults)
    except AnnotationError as error:
        raise kopf.PermanentError(f"the operator's sidecar defaults are unusable: {error}") from None
    if config.tls == "self-signed":
        certificate = write_self_signed(config.cert_dir, config.webhook_hostnames)
    else:
        certificate = mounted_certificate(config.cert_dir)
    memo.config = config
    memo.ca_bundle = certificate.ca_bundle
    settings.admission.server = kopf.WebhookServer(
        addr=config.webhook_address,
        port=config.webhook_port,
        host=config.webhook_hostnames[0],
        certfile=certificate.certfile,
        pkeyfile=certificate.keyfile,
    )
    logger.info(f"Admission webhook on {config.webhook_address}:{config.webhook_port} ({config.tls} TLS).")


@kopf.on.mutate("v1", "pods", id=INJECT_WEBHOOK, operations=["CREATE"], ignore_failures=True)
def inject_sidecar(
    body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: kopf.Logger, **_: Any
) -> None:
    try:
        operations = injection_patch(body, memo.config.sidecar_defaults)
    except AnnotationError as error:
        # The pod opted in but asks for something unusable: refuse it with the reason, so that the
        # mistake shows up in the creator's events instead of a gateway silently running without us.
        raise kopf.AdmissionError(str(error), code=400) from None
    if operations:
        patch.fns.append(lambda raw: jsonpatch.apply_patch(raw, operations, in_place=True))
        logger.info("Injecting the toolsearch proxy.")


@kopf.on.event("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations")
def publish_ca_bundle(
    event: kopf.RawEvent, name: str, body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any
) -> None:
    deleted = event.get("type") == "DELETED"
    if memo.ca_bundle is None or deleted or name != memo.config.webhook_configuration:
        return
    webhooks = webhooks_with_ca_bundle(body.get("webhooks") or [], memo.ca_bundle)
    if webhooks is not None:
        patch["webhooks"] = webhooks


@kopf.on.event("agentgateway.dev", "v1alpha1", "agentgatewayparameters", annotations={INJECT: "true"})
def write_overlay(
    event: kopf.RawEvent, body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any
) -> None:
    if event.get("type") == "DELETED":
        return
    try:
        overlay = parameters_patch(body, memo.config.sidecar_defaults)
    except AnnotationError as error:
        kopf.warn(body, reason="InvalidAnnotation", message=str(error))
        return
    patch.update(overlay)
