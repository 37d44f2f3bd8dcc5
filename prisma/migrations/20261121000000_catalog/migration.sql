-- Primary keys of replicated tables. Each site restricts this sequence to its own ID range when it is
-- registered (see apps/api/src/sites), so inserts at different sites never collide.
CREATE SEQUENCE "catalog_id_seq" AS BIGINT;

-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "StorageDriver" AS ENUM ('local');

-- CreateEnum
CREATE TYPE "ReplicaStatus" AS ENUM ('good', 'stale');

-- CreateEnum
CREATE TYPE "PermissionLevel" AS ENUM ('read', 'write', 'own');

-- CreateEnum
CREATE TYPE "TokenScope" AS ENUM ('read', 'write', 'admin');

-- CreateEnum
CREATE TYPE "MembershipRole" AS ENUM ('member', 'manager');

-- CreateEnum
CREATE TYPE "TrashKind" AS ENUM ('collection', 'object');

-- CreateTable
CREATE TABLE "sites" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "url" TEXT,
    "id_range_start" BIGINT NOT NULL,
    "id_range_end" BIGINT NOT NULL,
    "is_local" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sites_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "storage_resources" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "site_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "driver" "StorageDriver" NOT NULL DEFAULT 'local',
    "root_path" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "storage_resources_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "users" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "username" TEXT NOT NULL,
    "display_name" TEXT NOT NULL,
    "email" TEXT,
    "password_hash" TEXT NOT NULL,
    "is_admin" BOOLEAN NOT NULL DEFAULT false,
    "active_group_id" BIGINT,
    "disabled_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "users_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "project_groups" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "project_groups_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memberships" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "user_id" BIGINT NOT NULL,
    "group_id" BIGINT NOT NULL,
    "role" "MembershipRole" NOT NULL DEFAULT 'member',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "memberships_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "collections" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "parent_id" BIGINT,
    "name" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "owner_id" BIGINT NOT NULL,
    "group_id" BIGINT,
    "trash_id" BIGINT NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "collections_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "data_objects" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "collection_id" BIGINT NOT NULL,
    "name" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "checksum" TEXT NOT NULL,
    "content_type" TEXT NOT NULL DEFAULT 'application/octet-stream',
    "owner_id" BIGINT NOT NULL,
    "group_id" BIGINT,
    "version" INTEGER NOT NULL DEFAULT 1,
    "trash_id" BIGINT NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "data_objects_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "replicas" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "object_id" BIGINT NOT NULL,
    "site_id" TEXT NOT NULL,
    "resource_id" BIGINT NOT NULL,
    "physical_path" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "checksum" TEXT NOT NULL,
    "status" "ReplicaStatus" NOT NULL DEFAULT 'good',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "replicas_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "permissions" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "collection_id" BIGINT,
    "object_id" BIGINT,
    "user_id" BIGINT,
    "group_id" BIGINT,
    "level" "PermissionLevel" NOT NULL,
    "recursive" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "permissions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_tokens" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "user_id" BIGINT NOT NULL,
    "name" TEXT NOT NULL,
    "secret_hash" TEXT NOT NULL,
    "scope" "TokenScope" NOT NULL,
    "collection_id" BIGINT,
    "expires_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),
    "last_used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "api_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sessions" (
    "id" TEXT NOT NULL,
    "user_id" BIGINT NOT NULL,
    "csrf_token" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "trash_entries" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "kind" "TrashKind" NOT NULL,
    "collection_id" BIGINT,
    "object_id" BIGINT,
    "original_path" TEXT NOT NULL,
    "deleted_by_id" BIGINT NOT NULL,
    "deleted_at_site" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "trash_entries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "storage_resources_site_id_name_key" ON "storage_resources"("site_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "users_username_key" ON "users"("username");

-- CreateIndex
CREATE UNIQUE INDEX "project_groups_name_key" ON "project_groups"("name");

-- CreateIndex
CREATE INDEX "memberships_group_id_idx" ON "memberships"("group_id");

-- CreateIndex
CREATE UNIQUE INDEX "memberships_user_id_group_id_key" ON "memberships"("user_id", "group_id");

-- CreateIndex
CREATE INDEX "collections_parent_id_trash_id_updated_at_idx" ON "collections"("parent_id", "trash_id", "updated_at");

-- CreateIndex
CREATE INDEX "collections_trash_id_idx" ON "collections"("trash_id");

-- CreateIndex
CREATE UNIQUE INDEX "collections_path_trash_id_key" ON "collections"("path", "trash_id");

-- CreateIndex
CREATE UNIQUE INDEX "collections_parent_id_trash_id_name_key" ON "collections"("parent_id", "trash_id", "name");

-- CreateIndex
CREATE INDEX "data_objects_collection_id_trash_id_size_idx" ON "data_objects"("collection_id", "trash_id", "size");

-- CreateIndex
CREATE INDEX "data_objects_collection_id_trash_id_updated_at_idx" ON "data_objects"("collection_id", "trash_id", "updated_at");

-- CreateIndex
CREATE UNIQUE INDEX "data_objects_collection_id_trash_id_name_key" ON "data_objects"("collection_id", "trash_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "replicas_object_id_site_id_resource_id_key" ON "replicas"("object_id", "site_id", "resource_id");

-- CreateIndex
CREATE INDEX "permissions_collection_id_idx" ON "permissions"("collection_id");

-- CreateIndex
CREATE INDEX "permissions_object_id_idx" ON "permissions"("object_id");

-- CreateIndex
CREATE UNIQUE INDEX "permissions_collection_id_object_id_user_id_group_id_key" ON "permissions"("collection_id", "object_id", "user_id", "group_id");

-- CreateIndex
CREATE UNIQUE INDEX "api_tokens_secret_hash_key" ON "api_tokens"("secret_hash");

-- CreateIndex
CREATE INDEX "api_tokens_user_id_idx" ON "api_tokens"("user_id");

-- CreateIndex
CREATE INDEX "sessions_user_id_idx" ON "sessions"("user_id");

-- CreateIndex
CREATE INDEX "trash_entries_deleted_by_id_idx" ON "trash_entries"("deleted_by_id");

-- AddForeignKey
ALTER TABLE "storage_resources" ADD CONSTRAINT "storage_resources_site_id_fkey" FOREIGN KEY ("site_id") REFERENCES "sites"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "users" ADD CONSTRAINT "users_active_group_id_fkey" FOREIGN KEY ("active_group_id") REFERENCES "project_groups"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_group_id_fkey" FOREIGN KEY ("group_id") REFERENCES "project_groups"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "collections" ADD CONSTRAINT "collections_parent_id_fkey" FOREIGN KEY ("parent_id") REFERENCES "collections"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "data_objects" ADD CONSTRAINT "data_objects_collection_id_fkey" FOREIGN KEY ("collection_id") REFERENCES "collections"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "replicas" ADD CONSTRAINT "replicas_object_id_fkey" FOREIGN KEY ("object_id") REFERENCES "data_objects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "replicas" ADD CONSTRAINT "replicas_site_id_fkey" FOREIGN KEY ("site_id") REFERENCES "sites"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "replicas" ADD CONSTRAINT "replicas_resource_id_fkey" FOREIGN KEY ("resource_id") REFERENCES "storage_resources"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "permissions" ADD CONSTRAINT "permissions_collection_id_fkey" FOREIGN KEY ("collection_id") REFERENCES "collections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "permissions" ADD CONSTRAINT "permissions_object_id_fkey" FOREIGN KEY ("object_id") REFERENCES "data_objects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "permissions" ADD CONSTRAINT "permissions_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "permissions" ADD CONSTRAINT "permissions_group_id_fkey" FOREIGN KEY ("group_id") REFERENCES "project_groups"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_tokens" ADD CONSTRAINT "api_tokens_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_tokens" ADD CONSTRAINT "api_tokens_collection_id_fkey" FOREIGN KEY ("collection_id") REFERENCES "collections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

