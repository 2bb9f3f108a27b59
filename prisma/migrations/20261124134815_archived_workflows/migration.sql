-- AlterTable
ALTER TABLE "workflow_registrations" ADD COLUMN     "archived_at" TIMESTAMPTZ(3);
