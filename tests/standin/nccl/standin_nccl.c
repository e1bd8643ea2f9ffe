/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stand-in for NCCL's libnccl.so.2 (see standin_nccl.h). A communicator is a small heap object
 * that remembers its rank and size; collectives check their communicator and return.
 */
#include "standin_nccl.h"

#include <stdlib.h>

struct standin_nccl_comm {
  int rank;
  int nranks;
};

enum { ncclSuccess = 0, ncclInvalidArgument = 4 };

static ncclResult_t make(ncclComm_t *comm, int nranks, int rank) {
  if (comm == NULL || nranks < 1 || rank < 0 || rank >= nranks)
    return ncclInvalidArgument;
  *comm = malloc(sizeof **comm);
  if (*comm == NULL)
    return ncclInvalidArgument;
  (*comm)->rank = rank;
  (*comm)->nranks = nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  (void)id;
  return make(comm, nranks, rank);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config) {
  (void)id;
  (void)config;
  return make(comm, nranks, rank);
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config) {
  (void)color;
  (void)config;
  return comm == NULL ? ncclInvalidArgument : make(newcomm, comm->nranks, key % comm->nranks);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  free(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }

#define CHECK_COMM(comm) ((comm) == NULL ? ncclInvalidArgument : ncclSuccess)

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)op, (void)stream;
  return CHECK_COMM(comm);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)root, (void)stream;
  return CHECK_COMM(comm);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)op, (void)root, (void)stream;
  return CHECK_COMM(comm);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)sendcount, (void)datatype, (void)stream;
  return CHECK_COMM(comm);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)recvcount, (void)datatype, (void)op, (void)stream;
  return CHECK_COMM(comm);
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)count, (void)datatype, (void)peer, (void)stream;
  return CHECK_COMM(comm);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  (void)recvbuff, (void)count, (void)datatype, (void)peer, (void)stream;
  return CHECK_COMM(comm);
}
