-- Rows an export should not hold, each of which the importer must count, never
-- drop or misread without a word. One process: pid 4242 (globalPid 1<<48 | 4242<<24).
-- Kernels: 3 kept (one with a text device and a 2^40 grid, read as 0; one naming
-- string 999, which StringIds lacks), 3 left out (a text start, an end with a
-- fraction, a row of NULLs whose process is unknown). RUNTIME: a text return
-- value (kept, read as 0). MEMSET: no `start` column, so both rows are left out.
-- NVTX: a range kept, a row without an event type and a mark with a text start
-- left out.
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
  correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER, gridX INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (begin INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER, domainId INTEGER);
INSERT INTO StringIds VALUES (10, 'void gemm_kernel<float>(float*, int)'), (11, 'gemm_kernel'),
  (20, 'cudaLaunchKernel_v7000');
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (1000, 2000, 0, 7, 1, 281546145660928, 10, 11, 128),
  ('soon', 2500, 0, 7, 2, 281546145660928, 10, 11, 128),
  (3000, 3500.5, 0, 7, 3, 281546145660928, 10, 11, 128),
  (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (4000, 4500, 'gpu0', 7, 4, 281546145660928, 10, 11, 1099511627776),
  (5000, 5500, 0, 7, 5, 281546145660928, 999, NULL, 64);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (900, 950, 0, 281546145665170, 1, 20, 0),
  (3900, 3950, 0, 281546145665170, 4, 20, 'cudaSuccess'),
  (4900, 4950, 0, 281546145665170, 5, 20, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (600, 700, 0, 7, 6, 281546145660928, 4096),
  (800, 850, 0, 7, 7, 281546145660928, 4096);
INSERT INTO NVTX_EVENTS VALUES (100, 6000, 59, 'step', 281546145665170, 0),
  (200, 300, NULL, 'no type', 281546145665170, 0),
  ('later', NULL, 34, 'mark', 281546145665170, 0);
