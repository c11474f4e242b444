# The sandbox image: our code on top of the offline base (see docs/runtime.md).
# `airlock image build` sends a context holding Dockerfile, package.json, dist/, bundle/ and the
# pruned production node_modules/, with build arg BASE=airlock/base:<hash>.
ARG BASE=airlock/base:latest
FROM ${BASE}
# node_modules first: it changes rarely, so this layer stays cached when only our code changes.
COPY node_modules /opt/airlock/node_modules
COPY package.json /opt/airlock/package.json
COPY dist /opt/airlock/dist
# One-file bundles of the sandbox processes' entry points over dist/<name>/main.js (faster start;
# empty when esbuild was not installed at build time). The modules they came from stay beside them.
COPY bundle /opt/airlock/dist
COPY extensions/fonts /opt/airlock/extensions/fonts
ENV NODE_ENV=production LANG=C.UTF-8
WORKDIR /workspace
LABEL airlock.image="sandbox"
# The supervisor runs as root with only SETUID/SETGID (set by the runtime) and drops the agent to 1001.
USER 0:0
ENTRYPOINT ["/usr/local/bin/node", "/opt/airlock/dist/supervisor/main.js"]
