-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "projects" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "event_sequence" BIGINT NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "projects_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "project_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "last_four" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "deployments" (
    "project_id" UUID NOT NULL,
    "deployment_id" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'active',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "deployments_pkey" PRIMARY KEY ("project_id","deployment_id")
);

-- CreateTable
CREATE TABLE "workflow_registrations" (
    "project_id" UUID NOT NULL,
    "deployment_id" TEXT NOT NULL,
    "workflow_id" TEXT NOT NULL,
    "workflow_type" TEXT NOT NULL DEFAULT 'workflow',
    "trigger_on_event" BOOLEAN NOT NULL DEFAULT false,
    "scheduled" BOOLEAN NOT NULL DEFAULT false,
    "queue_name" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "workflow_registrations_pkey" PRIMARY KEY ("project_id","deployment_id","workflow_id")
);

-- CreateTable
CREATE TABLE "agents" (
    "project_id" UUID NOT NULL,
    "deployment_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "system_prompt" TEXT,
    "tools" JSONB NOT NULL DEFAULT '[]',
    "temperature" DOUBLE PRECISION,
    "max_output_tokens" INTEGER,
    "config" JSONB,
    "metadata" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "agents_pkey" PRIMARY KEY ("project_id","deployment_id","agent_id")
);

-- CreateTable
CREATE TABLE "tools" (
    "project_id" UUID NOT NULL,
    "deployment_id" TEXT NOT NULL,
    "tool_id" TEXT NOT NULL,
    "tool_type" TEXT NOT NULL DEFAULT 'default',
    "description" TEXT,
    "parameters" JSONB,
    "metadata" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "tools_pkey" PRIMARY KEY ("project_id","deployment_id","tool_id")
);

-- CreateTable
CREATE TABLE "queues" (
    "project_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "concurrency_limit" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "queues_pkey" PRIMARY KEY ("project_id","name")
);

-- CreateTable
CREATE TABLE "executions" (
    "id" UUID NOT NULL,
    "project_id" UUID NOT NULL,
    "workflow_id" TEXT NOT NULL,
    "deployment_id" TEXT NOT NULL,
    "queue_name" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "input" JSONB NOT NULL,
    "result" JSONB,
    "error" JSONB,
    "concurrency_key" TEXT,
    "attempt" INTEGER NOT NULL DEFAULT 1,
    "dispatch_seq" INTEGER NOT NULL DEFAULT 0,
    "parent_execution_id" UUID,
    "root_execution_id" UUID,
    "step_key" TEXT,
    "wait_for_subworkflow" BOOLEAN NOT NULL DEFAULT false,
    "suspended_step_key" TEXT,
    "run_timeout_seconds" INTEGER,
    "deadline_at" TIMESTAMPTZ(3),
    "initial_state" JSONB,
    "session_id" TEXT,
    "user_id" TEXT,
    "worker_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "cancelled_at" TIMESTAMPTZ(3),

    CONSTRAINT "executions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "step_results" (
    "id" UUID NOT NULL,
    "execution_id" UUID NOT NULL,
    "step_key" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "kind" TEXT NOT NULL DEFAULT 'run',
    "status" TEXT NOT NULL,
    "output" JSONB,
    "error" JSONB,
    "attempts" INTEGER NOT NULL DEFAULT 1,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "step_results_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "waits" (
    "id" UUID NOT NULL,
    "project_id" UUID NOT NULL,
    "execution_id" UUID NOT NULL,
    "step_key" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "kind" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "topic" TEXT,
    "match_filter" JSONB,
    "wake_at" TIMESTAMPTZ(3),
    "child_execution_id" UUID,
    "payload" JSONB,
    "resolved_data" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "resolved_at" TIMESTAMPTZ(3),

    CONSTRAINT "waits_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "events" (
    "id" UUID NOT NULL,
    "project_id" UUID NOT NULL,
    "sequence_id" BIGINT NOT NULL,
    "topic" TEXT NOT NULL,
    "event_type" TEXT,
    "data" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "event_triggers" (
    "id" UUID NOT NULL,
    "project_id" UUID NOT NULL,
    "workflow_id" TEXT NOT NULL,
    "deployment_id" TEXT NOT NULL,
    "event_topic" TEXT NOT NULL,
    "batch_size" INTEGER NOT NULL,
    "batch_timeout_seconds" INTEGER,
    "queue_name" TEXT,
    "status" TEXT NOT NULL DEFAULT 'active',
    "last_sequence_id" BIGINT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "event_triggers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "schedules" (
    "id" UUID NOT NULL,
    "project_id" UUID NOT NULL,
    "workflow_id" TEXT NOT NULL,
    "key" TEXT NOT NULL DEFAULT 'global',
    "cron" TEXT NOT NULL,
    "timezone" TEXT NOT NULL DEFAULT 'UTC',
    "input" JSONB NOT NULL DEFAULT '{}',
    "status" TEXT NOT NULL DEFAULT 'active',
    "overlap_policy" TEXT NOT NULL DEFAULT 'skip',
    "catchup_window_seconds" INTEGER NOT NULL DEFAULT 0,
    "last_run_at" TIMESTAMPTZ(3),
    "next_run_at" TIMESTAMPTZ(3),
    "last_execution_id" UUID,
    "buffered_run_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "schedules_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "workers" (
    "id" UUID NOT NULL,
    "project_id" UUID NOT NULL,
    "deployment_id" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'online',
    "capabilities" JSONB NOT NULL DEFAULT '{}',
    "max_concurrent_executions" INTEGER,
    "running_executions" INTEGER NOT NULL DEFAULT 0,
    "push_endpoint_url" TEXT,
    "hostname" TEXT,
    "heartbeat_interval_seconds" INTEGER NOT NULL,
    "last_heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "registered_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "spans" (
    "span_id" TEXT NOT NULL,
    "trace_id" TEXT NOT NULL,
    "project_id" UUID NOT NULL,
    "execution_id" UUID,
    "parent_span_id" TEXT,
    "name" TEXT NOT NULL,
    "span_type" TEXT NOT NULL,
    "workflow_id" TEXT,
    "status" TEXT,
    "attributes" JSONB NOT NULL DEFAULT '{}',
    "input" JSONB,
    "output" JSONB,
    "error" JSONB,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "ended_at" TIMESTAMPTZ(3),

    CONSTRAINT "spans_pkey" PRIMARY KEY ("span_id")
);

-- CreateTable
CREATE TABLE "idempotency_records" (
    "project_id" UUID NOT NULL,
    "operation" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "request_hash" TEXT NOT NULL,
    "response_status" INTEGER NOT NULL,
    "response_body" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_records_pkey" PRIMARY KEY ("project_id","operation","key")
);

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "api_keys_project_id_created_at_idx" ON "api_keys"("project_id", "created_at");

-- CreateIndex
CREATE INDEX "deployments_project_id_created_at_idx" ON "deployments"("project_id", "created_at");

-- CreateIndex
CREATE INDEX "workflow_registrations_project_id_workflow_id_created_at_idx" ON "workflow_registrations"("project_id", "workflow_id", "created_at");

-- CreateIndex
CREATE INDEX "agents_project_id_agent_id_created_at_idx" ON "agents"("project_id", "agent_id", "created_at");

-- CreateIndex
CREATE INDEX "tools_project_id_tool_id_created_at_idx" ON "tools"("project_id", "tool_id", "created_at");

-- CreateIndex
CREATE INDEX "executions_project_id_created_at_id_idx" ON "executions"("project_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "executions_project_id_workflow_id_created_at_idx" ON "executions"("project_id", "workflow_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "executions_project_id_status_created_at_idx" ON "executions"("project_id", "status", "created_at" DESC);

-- CreateIndex
CREATE INDEX "executions_parent_execution_id_idx" ON "executions"("parent_execution_id");

-- CreateIndex
CREATE INDEX "executions_status_updated_at_idx" ON "executions"("status", "updated_at");

-- CreateIndex
CREATE INDEX "executions_worker_id_status_idx" ON "executions"("worker_id", "status");

-- CreateIndex
CREATE INDEX "step_results_execution_id_seq_idx" ON "step_results"("execution_id", "seq");

-- CreateIndex
CREATE UNIQUE INDEX "step_results_execution_id_step_key_key" ON "step_results"("execution_id", "step_key");

-- CreateIndex
CREATE INDEX "waits_status_wake_at_idx" ON "waits"("status", "wake_at");

-- CreateIndex
CREATE INDEX "waits_project_id_topic_status_idx" ON "waits"("project_id", "topic", "status");

-- CreateIndex
CREATE INDEX "waits_child_execution_id_idx" ON "waits"("child_execution_id");

-- CreateIndex
CREATE UNIQUE INDEX "waits_execution_id_step_key_key" ON "waits"("execution_id", "step_key");

-- CreateIndex
CREATE INDEX "events_project_id_topic_sequence_id_idx" ON "events"("project_id", "topic", "sequence_id");

-- CreateIndex
CREATE UNIQUE INDEX "events_project_id_sequence_id_key" ON "events"("project_id", "sequence_id");

-- CreateIndex
CREATE INDEX "event_triggers_project_id_event_topic_status_idx" ON "event_triggers"("project_id", "event_topic", "status");

-- CreateIndex
CREATE INDEX "event_triggers_status_idx" ON "event_triggers"("status");

-- CreateIndex
CREATE UNIQUE INDEX "event_triggers_project_id_workflow_id_event_topic_key" ON "event_triggers"("project_id", "workflow_id", "event_topic");

-- CreateIndex
CREATE INDEX "schedules_status_next_run_at_idx" ON "schedules"("status", "next_run_at");

-- CreateIndex
CREATE INDEX "schedules_project_id_created_at_idx" ON "schedules"("project_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "schedules_project_id_workflow_id_key_key" ON "schedules"("project_id", "workflow_id", "key");

-- CreateIndex
CREATE INDEX "workers_project_id_deployment_id_status_idx" ON "workers"("project_id", "deployment_id", "status");

-- CreateIndex
CREATE INDEX "workers_status_last_heartbeat_at_idx" ON "workers"("status", "last_heartbeat_at");

-- CreateIndex
CREATE INDEX "spans_project_id_trace_id_idx" ON "spans"("project_id", "trace_id");

-- CreateIndex
CREATE INDEX "spans_project_id_parent_span_id_started_at_idx" ON "spans"("project_id", "parent_span_id", "started_at" DESC);

-- CreateIndex
CREATE INDEX "idempotency_records_created_at_idx" ON "idempotency_records"("created_at");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deployments" ADD CONSTRAINT "deployments_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "workflow_registrations" ADD CONSTRAINT "workflow_registrations_project_id_deployment_id_fkey" FOREIGN KEY ("project_id", "deployment_id") REFERENCES "deployments"("project_id", "deployment_id") ON DELETE CASCADE ON UPDATE CASCADE;
