-- An Nsight Systems 2024.x export (schema 3.x; columns from the 2024.6 export
-- schema): greenContextId columns, ENUM_* tables naming every code,
-- META_DATA_EXPORT, NVTX text through textId (registered strings) and a
-- binaryData payload column, start/end ranges. One process: pid 5151.
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, isDiscrete INTEGER,
  l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER,
  uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER, computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
  srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
  graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER,
  uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL,
  jsonTextId INTEGER, jsonText TEXT, binaryData TEXT);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_NSYS_EVENT_CLASS (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE GPU_METRICS (timestamp INTEGER NOT NULL, typeId INTEGER NOT NULL, metricId INTEGER NOT NULL, value INTEGER NOT NULL);

INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (0,'CUDA_MEMCPY_KIND_UNKNOWN','Unknown'), (1,'CUDA_MEMCPY_KIND_HTOD','Host-to-Device'),
  (2,'CUDA_MEMCPY_KIND_DTOH','Device-to-Host'), (3,'CUDA_MEMCPY_KIND_HTOA','Host-to-Array'), (4,'CUDA_MEMCPY_KIND_ATOH','Array-to-Host'),
  (5,'CUDA_MEMCPY_KIND_ATOA','Array-to-Array'), (6,'CUDA_MEMCPY_KIND_ATOD','Array-to-Device'), (7,'CUDA_MEMCPY_KIND_DTOA','Device-to-Array'),
  (8,'CUDA_MEMCPY_KIND_DTOD','Device-to-Device'), (9,'CUDA_MEMCPY_KIND_HTOH','Host-to-Host'), (10,'CUDA_MEMCPY_KIND_PTOP','Peer-to-Peer'),
  (11,'CUDA_MEMCPY_KIND_UVM_HTOD','Unified Host-to-Device'), (12,'CUDA_MEMCPY_KIND_UVM_DTOH','Unified Device-to-Host'),
  (13,'CUDA_MEMCPY_KIND_UVM_DTOD','Unified Device-to-Device');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable'), (1,'CUDA_MEMOPR_MEMORY_KIND_PINNED','Pinned'),
  (2,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device'), (3,'CUDA_MEMOPR_MEMORY_KIND_ARRAY','Array'),
  (4,'CUDA_MEMOPR_MEMORY_KIND_MANAGED','Managed'), (5,'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC','Device Static'),
  (6,'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC','Managed Static'), (7,'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN','Unknown');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (0,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN','Unknown'),
  (1,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE','Event sync'),
  (2,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT','Stream wait sync'),
  (3,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE','Stream sync'),
  (4,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE','Context sync');
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (34,'NvtxMark','NvtxMark'), (59,'NvtxPushPopRange','NvtxPushPopRange'),
  (60,'NvtxStartEndRange','NvtxStartEndRange'), (75,'NvtxDomainCreate','NvtxDomainCreate');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (0,'TRACE_PROCESS_EVENT_CUDA_RUNTIME','CUDA runtime'),
  (1,'TRACE_PROCESS_EVENT_CUDA_DRIVER','CUDA driver'), (67,'TRACE_PROCESS_EVENT_CUDABACKTRACE','CUDA backtrace');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION','2024.6.2.225'), ('EXPORT_SCHEMA_VERSION','3.16.1');
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1730000000000000000, '2024-10-27T03:33:20', '2024-10-27T03:33:20');
INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, totalMemory, smCount, uuid, cuDevice, computeMajor, computeMinor)
  VALUES (281474976710656, 0, 'NVIDIA H200', '0000:19:00.0', 150109880320, 132, 'GPU-9b2c0f3e-1111-2222-3333-444455556666', 0, 9, 0);
INSERT INTO PROCESSES VALUES (281561396150272, 5151, 'torchrun-worker');
INSERT INTO StringIds VALUES (1, 'void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int, float*)'),
  (2, 'vectorized_elementwise_kernel'), (3, 'cudaLaunchKernel_v7000'), (4, 'cudaMemcpyAsync_v3020'), (5, 'cudaEventSynchronize_v3020'),
  (6, 'forward'), (7, 'optimizer'), (8, 'pt_main_thread'), (9, 'cudaLaunchKernel'), (10, 'cudaMemsetAsync_v3020'),
  (11, 'data loading');
INSERT INTO ThreadNames VALUES (8, 10, 281561396155423);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid,
  demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory,
  dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId)
  VALUES (1000, 1800, 0, 1, 3, 7, 11, 281561396150272, 1, 2, 32, 1024, 1, 1, 128, 1, 1, 0, 0, 0, 0, 1),
         (2000, 2800, 0, 1, 3, 7, 12, 281561396150272, 1, 2, 32, 1024, 1, 1, 128, 1, 1, 0, 0, 0, 0, 2),
         (3000, 3100, 0, 1, 3, 7, 13, 281561396150272, 777, 2, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, 3);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid,
  bytes, copyKind, srcKind, dstKind) VALUES (500, 700, 0, 1, 3, 7, 14, 281561396150272, 65536, 2, 2, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid,
  value, bytes, memKind) VALUES (710, 720, 0, 1, 3, 7, 16, 281561396150272, 0, 512, 4);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 140, 0, 281561396155423, 14, 4, 0, NULL),
  (150, 160, 0, 281561396155423, 16, 10, 0, NULL),
  (200, 230, 0, 281561396155423, 11, 3, 0, NULL), (199, 231, 67, 281561396155423, 11, 9, 0, 4),
  (240, 260, 0, 281561396155423, 12, 3, 0, NULL), (270, 290, 0, 281561396155423, 13, 3, 0, NULL),
  (3200, 3300, 0, 281561396155423, 15, 5, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start, end, deviceId, contextId, greenContextId, streamId, correlationId,
  globalPid, syncType, eventId) VALUES (3200, 3300, 0, 1, 3, 7, 15, 281561396150272, 1, 17);
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId, binaryData) VALUES
  (90, 2900, 59, NULL, 281561396155423, 6, 0, NULL),
  (2950, 3150, 60, NULL, 281561396155423, 7, 0, NULL),
  (50, 80, 59, 'data loading', 281561396155423, NULL, 0, NULL),
  (2940, NULL, 34, NULL, 281561396155423, 11, 0, NULL);
INSERT INTO GPU_METRICS VALUES (1000, 1, 0, 97), (1100, 1, 0, 95), (1000, 1, 1, 1980);
