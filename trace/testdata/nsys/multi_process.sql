-- One export holding two ranks of an MPI job (nsys profile mpirun ...): two
-- processes with kernels, ranks named by nsys's MPI tracing ("MPI Rank N"
-- thread names), plus a third process with NVTX only (counted, not a trace).
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER NOT NULL, devStateName TEXT NOT NULL, name TEXT NOT NULL,
  nameEnum INTEGER NOT NULL, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT, globalTid INTEGER,
  textId INTEGER, domainId INTEGER);
-- The recorded environment names a rank, but it is the host's, not one process's: not used for two ranks.
INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (1, 'Local (CLI)', 'DeviceEnvironment', 610, 'OMPI_COMM_WORLD_RANK=0');
INSERT INTO StringIds VALUES (1, 'saxpy(double *, double *, double *, double, int)'), (2, 'saxpy'), (3, 'cudaLaunchKernel_v7000');
-- pid 4242 is rank 1, pid 5151 is rank 0 (each names its thread "MPI Rank N").
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 2000, 0, 1, 7, 1, 281546145660928, 1, 2),
  (1100, 2200, 1, 1, 7, 1, 281561396150272, 1, 2), (3100, 4200, 1, 1, 7, 2, 281561396150272, 1, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (900, 950, 0, 281546145665170, 1, 3, 0, NULL),
  (1000, 1050, 0, 281561396155423, 1, 3, 0, NULL), (3000, 3050, 0, 281561396155423, 2, 3, 0, NULL);
INSERT INTO NVTX_EVENTS VALUES (10, NULL, 39, 'MPI Rank 1', 281546145665170, NULL, 0),
  (12, NULL, 39, 'MPI Rank 0', 281561396155423, NULL, 0),
  (20, 30, 59, 'launcher work', 281575640012656, NULL, 0);
