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
# empty when esbuild was not installed at build time), and dist/supervisor/supervisor.js, which
# the supervisor's small entry loads once it has launched the agent. The modules they came from
# stay beside them.
COPY bundle /opt/airlock/dist
COPY extensions/fonts /opt/airlock/extensions/fonts
ENV NODE_ENV=production LANG=C.UTF-8 NODE_COMPILE_CACHE=/opt/airlock/compile-cache
# glibc malloc settings of the sandbox processes (SANDBOX_MALLOC_ENV in core/sandbox-env.ts).
ENV GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=131072:glibc.malloc.mmap_threshold=131072
# V8's compile cache of the four entry points, made once here: at run time the root filesystem is
# read-only and the processes only read it. Node keeps one folder per uid and V8 flags, so each
# process runs here under its own uid (supervisor root; agent child and MCP servers 1001) with the
# flags it runs with (SANDBOX_NODE_FLAGS in core/sandbox-env.ts; the agent passes them on). The
# agent exits when its stdin ends, its servers with it; the supervisor on SIGTERM.
RUN mkdir -p /opt/airlock/compile-cache /run/airlock && chown 1001:1001 /opt/airlock/compile-cache \
 && HOME=/tmp setpriv --reuid=1001 --regid=1001 --clear-groups /usr/local/bin/node --max-semi-space-size=1 /opt/airlock/dist/agent/main.js </dev/null >/dev/null \
 && { timeout -s TERM 3 /usr/local/bin/node --max-semi-space-size=1 /opt/airlock/dist/supervisor/main.js 2>/dev/null || true; } \
 && rm -f /run/airlock/control.sock && chown -R 0:0 /opt/airlock/compile-cache && chmod -R a+rX,go-w /opt/airlock/compile-cache
# The V8 startup snapshots of the agent and of the supervisor (core/sandbox-env.ts SNAPSHOT_BLOB):
# each bundle's modules loaded once here, so a process starts from their heap instead of
# evaluating them (docs/runtime.md, "Cold start, step by step"). Made with the image's node and
# the flags the processes run with (a blob fits only those); only when the context carried the
# CommonJS bundle a blob is made from. `airlock image build` points the ENTRYPOINT at the
# supervisor's blob when it made one.
RUN for d in agent supervisor; do \
      if [ -f /opt/airlock/dist/$d/snapshot.cjs ]; then \
        cd /opt/airlock/dist/$d && echo '{"builder":"snapshot.cjs","withoutCodeCache":true}' >snapshot.json \
        && /usr/local/bin/node --no-warnings --max-semi-space-size=1 --snapshot-blob snapshot.blob --build-snapshot-config snapshot.json \
        && rm snapshot.json && chmod 0644 snapshot.blob || exit 1; \
      fi; done
WORKDIR /workspace
LABEL airlock.image="sandbox"
# The supervisor runs as root with only SETUID/SETGID (set by the runtime) and drops the agent to 1001.
USER 0:0
ENTRYPOINT ["/usr/local/bin/node", "--max-semi-space-size=1", "/opt/airlock/dist/supervisor/main.js"]
