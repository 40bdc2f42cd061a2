# The API and the worker (docker-compose.yml runs both from this image with different commands).
# No build step: tsx runs the TypeScript sources, and the worker bundles workflows/ with the
# webpack of @temporalio/worker when it starts, so the sources are part of the image.
FROM node:24.21.0-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first, so a source change does not reinstall them. tsx is a runtime dependency,
# so --omit=dev keeps it (and drops TypeScript, ESLint, vitest).
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY . .

# Output files (and, when ADMIN_TOKEN / URL_SIGNING_SECRET are not given, generated secrets) go
# to DATA_DIR; a named volume mounted here starts out owned by `node`.
RUN mkdir -p /data && chown node:node /data
ENV DATA_DIR=/data HOST=0.0.0.0 PORT=3000
# glibc gives every thread that allocates its own arena; sharp/libvips, the Temporal core and the
# render threads then hold far more memory than they use (docs/decisions/0018-worker-resources.md: -30 to -65 MB RSS).
ENV MALLOC_ARENA_MAX=2
USER node
EXPOSE 3000

# node gets SIGTERM directly (no npm/npx in between) and shuts down gracefully. The worker runs
# the same image with: node --import tsx runtime/worker-process.ts
CMD ["node", "--import", "tsx", "runtime/api-process.ts"]
