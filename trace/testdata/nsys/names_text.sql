-- Names stored as text, not StringIds ids (some exports and post-processing
-- tools write them so): kernel name columns of TEXT values, RUNTIME calls
-- with a `name` column and no nameId. No ENUM tables, no NVTX, no memset,
-- no synchronization table. One process: pid 4242.
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName TEXT, shortName TEXT,
  gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, name TEXT, returnValue INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
  srcKind INTEGER, dstKind INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (100, 200, 0, 7, 1, 281546145660928, 'void relu_kernel<__half>(__half*)', 'relu_kernel', 8, 1, 1, 256, 1, 1),
  (300, 400, 0, 7, 2, 281546145660928, NULL, 'only_short_name', 8, 1, 1, 256, 1, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (50, 60, 0, 281546145665170, 1, 'cudaLaunchKernel_v7000', 0),
  (250, 260, 0, 281546145665170, 2, 'cudaLaunchKernel_v7000', 0), (20, 40, 0, 281546145665170, 3, 'cudaMemcpy_v3020', 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (25, 35, 0, 7, 3, 281546145660928, 2048, 1, 0, 2);
