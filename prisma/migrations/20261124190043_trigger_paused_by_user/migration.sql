-- AlterTable
ALTER TABLE "event_triggers" ADD COLUMN     "paused_by_user" BOOLEAN NOT NULL DEFAULT false;
