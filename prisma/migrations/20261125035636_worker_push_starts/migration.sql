-- AlterTable
ALTER TABLE "workers" ADD COLUMN     "push_starts" INTEGER NOT NULL DEFAULT 0;
