"""Kubernetes operator that puts the toolsearch proxy next to agentgateway.

A mutating admission webhook adds the proxy container to pods annotated `toolsearch.dev/inject: "true"`
(`patch`), and for gateways managed by agentgateway's controller the operator writes the same container
into an annotated `AgentgatewayParameters` overlay (`overlay`). What the container looks like is decided
by annotations (`annotations`) and built by pure functions (`sidecar`); `handlers` wires them into kopf.
"""
