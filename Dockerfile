# syntax=docker/dockerfile:1
# One image for both jobs:
#   webhook     docker run servinggate:0.1.0                  (python -m webhook serve)
#   reconciler  docker run servinggate:0.1.0 reconcile ...    (python -m webhook reconcile)
# The build stage has a C compiler for gunicorn_h1c (gunicorn's C HTTP parser, which the server
# requires and the tests measure) where the index offers no wheel of it; the compiler, pip and the
# sources stay out of the final image, which gets only the virtual environment.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
RUN apt-get update \
 && apt-get install --yes --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/servinggate
WORKDIR /src
# Dependencies first, from pyproject.toml alone, so neither a code nor a README change
# reinstalls them (README.md is only the package's long description: an empty one will do).
COPY pyproject.toml ./
RUN mkdir webhook && touch webhook/__init__.py README.md \
 && /opt/servinggate/bin/pip install . \
 && /opt/servinggate/bin/pip uninstall --yes servinggate
COPY README.md LICENSE ./
COPY webhook ./webhook
RUN /opt/servinggate/bin/pip install --no-deps . \
 && /opt/servinggate/bin/python -m compileall -q /opt/servinggate/lib \
 && /opt/servinggate/bin/python -m webhook --help >/dev/null \
 && /opt/servinggate/bin/python -c "import gunicorn_h1c"
# pip is not needed at run time.
RUN /opt/servinggate/bin/python -m pip uninstall --yes pip

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="servinggate" \
      org.opencontainers.image.description="Admission webhook and scale-in reconciler for LLM inference (Kthena, Volcano, NPUs)" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/servinggate /opt/servinggate
# The root filesystem is read-only in the pod: no bytecode writes, HOME on the /tmp volume.
ENV PATH=/opt/servinggate/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
WORKDIR /var/run/servinggate
# A numeric UID, so that runAsNonRoot can verify it without /etc/passwd.
USER 10001:10001
EXPOSE 8443 8081
ENTRYPOINT ["python", "-m", "webhook"]
CMD ["serve"]
