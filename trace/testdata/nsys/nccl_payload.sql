-- NCCL >= 2.19 under Nsight Systems 2026.x, exported with
-- `nsys export --type sqlite --include-blobs=true`: the payload schema tables
-- as a real 2026.2.1 export (schema 3.25) has them (NCCL's AllReduce schema
-- 0x1000005: communicator id, "Message size [bytes]" at offset 8, reduction
-- op at 16; 24 bytes), and NVTX ranges in domain "NCCL" whose binaryData is a
-- 32-byte header (domain id, schema id, payload size, 32) and the payload.
-- One process, pid 7000, thread 7001; the launch API call (cuLaunchKernelEx)
-- of each NCCL kernel lies inside its call's range, except the last kernel
-- (launched at ncclGroupEnd: no payload).
--   range 1: 1 MiB all-reduce -> kernel corr 11 gets 1048576 bytes
--   range 2: 4 KiB all-reduce -> kernel corr 12 gets 4096 bytes
--   range 3: header's payload size disagrees with the blob: not decoded -> corr 13 keeps 0
--   range 4: domain "other" with the same layout: not NCCL, not counted
--   kernel corr 14: launched outside every range -> 0
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,
  blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER,
  uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL,
  jsonTextId INTEGER, jsonText TEXT, binaryData TEXT);
CREATE TABLE NVTX_PAYLOAD_SCHEMAS (domainId INTEGER, schemaId INTEGER, name TEXT, type INTEGER, flags INTEGER,
  numEntries INTEGER, payloadSize INTEGER, alignTo INTEGER);
CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId INTEGER NOT NULL, schemaId INTEGER NOT NULL, idx INTEGER NOT NULL,
  flags INTEGER, type INTEGER, name TEXT, description TEXT, arrayOrUnionDetail INTEGER, offset INTEGER);
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2026.2.1.210'), ('EXPORT_SCHEMA_VERSION', '3.25.0');
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1767225600000000000, NULL, NULL);
INSERT INTO StringIds VALUES (1, 'cuLaunchKernelEx'),
  (2, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),
  (3, 'ncclAllReduce'), (4, 'ncclGroupEnd'), (5, 'cudaStreamSynchronize_v3020');
INSERT INTO NVTX_PAYLOAD_SCHEMAS VALUES (1, 16777221, NULL, 1, NULL, 3, 24, NULL), (2, 16777221, NULL, 1, NULL, 3, 24, NULL);
INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES
  (1, 16777221, 0, NULL, 18, 'NCCL communicator ID', NULL, NULL, NULL),
  (1, 16777221, 1, NULL, 22, 'Message size [bytes]', NULL, NULL, 8),
  (1, 16777221, 2, NULL, 16777232, 'Reduction operation', NULL, NULL, 16),
  (2, 16777221, 0, NULL, 18, 'NCCL communicator ID', NULL, NULL, NULL),
  (2, 16777221, 1, NULL, 22, 'Message size [bytes]', NULL, NULL, 8);
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId, binaryData) VALUES
  (10, NULL, 75, 'NCCL', 117440519001, 1, NULL),
  (11, NULL, 75, 'other', 117440519001, 2, NULL),
  (100, 200, 59, 'ncclAllReduce', 117440519001, 1,
   X'0100000000000000' || X'0500000100000000' || X'1800000000000000' || X'2000000000000000' ||
   X'8877665544332211' || X'0000100000000000' || X'0000000000000000'),
  (300, 400, 59, 'ncclAllReduce', 117440519001, 1,
   X'0100000000000000' || X'0500000100000000' || X'1800000000000000' || X'2000000000000000' ||
   X'8877665544332211' || X'0010000000000000' || X'0000000000000000'),
  (500, 600, 59, 'ncclAllReduce', 117440519001, 1,
   X'0100000000000000' || X'0500000100000000' || X'2000000000000000' || X'2000000000000000' ||
   X'8877665544332211' || X'0000000100000000' || X'0000000000000000'),
  (700, 800, 59, 'ncclAllReduce', 117440519001, 2,
   X'0200000000000000' || X'0500000100000000' || X'1800000000000000' || X'2000000000000000' ||
   X'8877665544332211' || X'0000000200000000' || X'0000000000000000'),
  (900, 1000, 59, 'ncclGroupEnd', 117440519001, 1, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (150, 160, 1, 117440519001, 11, 1, 0, NULL), (350, 360, 1, 117440519001, 12, 1, 0, NULL),
  (550, 560, 1, 117440519001, 13, 1, 0, NULL), (950, 960, 1, 117440519001, 14, 1, 0, NULL),
  (1100, 1900, 0, 117440519001, 15, 5, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (170, 270, 0, 1, NULL, 7, 11, 117440512000, 2, 2, NULL, 64, 4, 1, 1, 256, 1, 1, 0, 0),
  (370, 470, 0, 1, NULL, 7, 12, 117440512000, 2, 2, NULL, 64, 4, 1, 1, 256, 1, 1, 0, 0),
  (570, 670, 0, 1, NULL, 7, 13, 117440512000, 2, 2, NULL, 64, 4, 1, 1, 256, 1, 1, 0, 0),
  (970, 1070, 0, 1, NULL, 7, 14, 117440512000, 2, 2, NULL, 64, 4, 1, 1, 256, 1, 1, 0, 0);
