-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "scope" TEXT;
