# One image for api, worker and scheduler; the service's command picks the process.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production TURBO_TELEMETRY_DISABLED=1 CHECKPOINT_DISABLE=1 SCARF_ANALYTICS=false
COPY package.json package-lock.json ./
COPY apps/api/package.json apps/api/
COPY apps/worker/package.json apps/worker/
COPY apps/scheduler/package.json apps/scheduler/
COPY packages/db/package.json packages/db/
COPY packages/engine/package.json packages/engine/
COPY packages/sdk/package.json packages/sdk/
COPY packages/shared/package.json packages/shared/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run db:generate
USER node
EXPOSE 8080
CMD ["node", "--import", "tsx", "apps/api/src/main.ts"]
