# syntax=docker/dockerfile:1
# The engine image. Build from the repository root:
#   docker build -f deploy/docker/engine.Dockerfile -t steerline-engine .
# Three stages: compile (dev dependencies), install production dependencies only,
# then a slim runtime that runs as the unprivileged `node` user.
ARG NODE_IMAGE=node:20.20.2-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# No install scripts (telemetry, embedded PostgreSQL). Optional packages stay: esbuild's platform binary,
# which bundles the console (npm run build), is one.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY libs ./libs
COPY apps ./apps
RUN npm run build

FROM ${NODE_IMAGE} AS deps
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
# The test-only parts off (docs/operations.md § Configuration): no `scripted` model, no `fail` tool.
ENV NODE_ENV=production STEERLINE_SCRIPTED_MODEL=off STEERLINE_FAIL_TOOL=off
WORKDIR /app
# Owned by root and read-only for the service user: a compromised process cannot rewrite its own code.
COPY --from=deps /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
# No port: the engine only talks to NATS. Its liveness shows in the `<prefix>_engines` KV bucket.

USER node
# Node handles SIGTERM itself (graceful shutdown); run with an init (compose: init: true) to reap children.
CMD ["node", "dist/apps/engine/src/main.js"]
