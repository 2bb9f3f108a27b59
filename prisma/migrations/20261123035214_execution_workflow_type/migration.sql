-- AlterTable
ALTER TABLE "executions" ADD COLUMN     "workflow_type" TEXT NOT NULL DEFAULT 'workflow';

-- Runs created before this column existed take the kind of the registration they ran from.
UPDATE "executions" AS e
SET "workflow_type" = r."workflow_type"
FROM "workflow_registrations" AS r
WHERE r."project_id" = e."project_id"
  AND r."deployment_id" = e."deployment_id"
  AND r."workflow_id" = e."workflow_id"
  AND r."workflow_type" <> 'workflow';
