-- An Nsight Systems 2022.x export (schema 2.9, as the real saxpy export):
-- names as StringIds ids, NVTX text inline, no ENUM_* tables (documented codes),
-- no greenContextId. One process: pid 4242 on host 1 (globalPid = 1<<48 | 4242<<24).
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE EXPORT_META_DATA (name TEXT NOT NULL, value TEXT);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, isDiscrete INTEGER,
  l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER,
  uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER, computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER NOT NULL, devStateName TEXT NOT NULL, name TEXT NOT NULL,
  nameEnum INTEGER NOT NULL, value TEXT NOT NULL);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL REFERENCES StringIds(id), priority INTEGER, globalTid INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
  copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
  srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER,
  virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL,
  bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,
  callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER REFERENCES StringIds(id),
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
  floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE COMPOSITE_EVENTS (id INTEGER NOT NULL PRIMARY KEY, start INTEGER NOT NULL, cpu INTEGER, threadState INTEGER,
  globalTid INTEGER, cpuCycles INTEGER NOT NULL);

INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_PRODUCT_VERSION', '2022.4.2.1'), ('EXPORT_SCHEMA_VERSION', '2.9.1');
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '2023-11-14T22:13:20', '2023-11-14T22:13:20');
INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, totalMemory, smCount, uuid, cuDevice, computeMajor, computeMinor)
  VALUES (281474976710656, 0, 'NVIDIA H100 80GB HBM3', '0000:19:00.0', 85520809984, 132, '5a1e4b2c-0000-1111-2222-333344445555', 0, 9, 0),
         (281474976710656, 1, 'NVIDIA H100 80GB HBM3', '0000:3b:00.0', 85520809984, 132, '5a1e4b2c-0000-1111-2222-333344445556', 1, 9, 0);
INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (281474976710656, 'Local (CLI)', 'Hostname', 619, 'gpu-node-07'),
                                          (281474976710656, 'Local (CLI)', 'DeviceEnvironment', 610, 'SLURM_GPUS_PER_TASK=1');
INSERT INTO PROCESSES VALUES (281546145660928, 4242, 'python3'), (281474993487872, 1, 'systemd');
INSERT INTO StringIds VALUES
  (10, 'void gemm_kernel<float>(float*, int)'), (11, 'gemm_kernel'), (12, '_Z11gemm_kernelIfEvPfi'),
  (13, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)'), (14, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL'),
  (20, 'cudaLaunchKernel_v7000'), (21, 'cudaMemcpyAsync_v3020'), (22, 'cudaMemset_v3020'), (23, 'cudaStreamSynchronize_v3020'),
  (24, 'cuLaunchKernel'), (25, 'cudnnConvolutionForward'), (26, 'cudaLaunchKernel'), (27, 'cudaMemcpyPeerAsync_v4000'),
  (30, 'python'), (31, 'ncclAllReduce');
INSERT INTO ThreadNames VALUES (30, 10, 281546145665170);
-- Kernels: two GEMMs on stream 7, one NCCL all-reduce on stream 13, one on device 1 without an API call.
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName,
  shortName, mangledName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory,
  dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId)
  VALUES (2000, 3000, 0, 1, 7, 1, 281546145660928, 10, 11, 12, 64, 128, 2, 1, 256, 1, 1, 1024, 2048, 0, 0, 1),
         (1000, 1500, 0, 1, 7, 2, 281546145660928, 10, 11, 12, 64, 128, 2, 1, 256, 1, 1, 1024, 2048, 0, 0, 2),
         (4000, 9000, 0, 1, 13, 3, 281546145660928, 13, 14, NULL, 96, 4, 1, 1, 640, 1, 1, 0, 0, 0, 0, 3),
         (9500, 9400, 1, 2, 21, 99, 281546145660928, 10, 11, 12, 64, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 4);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes,
  copyKind, srcKind, dstKind, srcDeviceId, dstDeviceId)
  VALUES (500, 900, 0, 1, 7, 4, 281546145660928, 1048576, 1, 1, 2, NULL, NULL),
         (9600, 9700, 0, 1, 7, 8, 281546145660928, 4096, 10, 2, 2, 0, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, globalPid, value, bytes, memKind)
  VALUES (950, 980, 0, 1, 7, 5, 281546145660928, 0, 4096, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (100, 150, 0, 281546145665170, 4, 21, 0, NULL),
  (160, 170, 0, 281546145665170, 5, 22, 0, NULL),
  (200, 260, 0, 281546145665170, 1, 20, 0, NULL),
  (199, 261, 67, 281546145665170, 1, 26, 0, 1),
  (300, 340, 0, 281546145665170, 2, 20, 0, NULL),
  (350, 380, 1, 281546145665178, 3, 24, 0, NULL),
  (400, 9100, 0, 281546145665170, 6, 23, 0, NULL),
  (9200, 9300, 28, 281546145665170, NULL, 25, 0, NULL),
  (9550, 9560, 0, 281546145665170, 8, 27, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (400, 9100, 0, 1, 7, 6, 281546145660928, 3, 0);
-- NVTX: the NCCL domain, a range in it, two ranges and a mark in the default
-- domain, a thread name naming the MPI rank, a range the capture stopped inside.
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId) VALUES
  (10, NULL, 75, 'NCCL', 281546145665170, NULL, 1),
  (11, NULL, 39, 'MPI Rank 2', 281546145665170, NULL, 0),
  (3900, 9050, 59, 'ncclAllReduce', 281546145665170, NULL, 1),
  (90, 4500, 59, 'train_step', 281546145665170, NULL, 0),
  (4600, 9900, 59, 'train_step', 281546145665170, NULL, 0),
  (4550, NULL, 34, 'checkpoint', 281546145665178, NULL, 0),
  (9950, NULL, 59, 'never closed', 281546145665170, NULL, 0);
INSERT INTO COMPOSITE_EVENTS VALUES (1, 120, 3, 1, 281546145665170, 0), (2, 220, 3, 1, 281546145665170, 0);
