# One image for api, worker and scheduler; the service's command picks the process.

# The dashboard is built with its dev dependencies (Vite) in a stage of its own; the API serves the
# result at / from apps/dashboard/dist.
FROM node:20-bookworm-slim AS dashboard
WORKDIR /app
COPY package.json package-lock.json ./
COPY apps/api/package.json apps/api/
COPY apps/dashboard/package.json apps/dashboard/
COPY apps/worker/package.json apps/worker/
COPY apps/scheduler/package.json apps/scheduler/
COPY packages/cli/package.json packages/cli/
COPY packages/db/package.json packages/db/
COPY packages/engine/package.json packages/engine/
COPY packages/sdk/package.json packages/sdk/
COPY packages/shared/package.json packages/shared/
RUN npm ci --no-audit --no-fund --include=dev
COPY . .
RUN npm run build:dashboard

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production TURBO_TELEMETRY_DISABLED=1 CHECKPOINT_DISABLE=1 SCARF_ANALYTICS=false
COPY package.json package-lock.json ./
COPY apps/api/package.json apps/api/
COPY apps/dashboard/package.json apps/dashboard/
COPY apps/worker/package.json apps/worker/
COPY apps/scheduler/package.json apps/scheduler/
COPY packages/cli/package.json packages/cli/
COPY packages/db/package.json packages/db/
COPY packages/engine/package.json packages/engine/
COPY packages/sdk/package.json packages/sdk/
COPY packages/shared/package.json packages/shared/
RUN npm ci --no-audit --no-fund
COPY . .
COPY --from=dashboard /app/apps/dashboard/dist apps/dashboard/dist
RUN npm run db:generate
USER node
EXPOSE 8080
CMD ["node", "--import", "tsx", "apps/api/src/main.ts"]
