// SPDX-License-Identifier: Apache-2.0
#pragma once
// neutracer_container_info: what is known about each container with a traced process. Pure.
#include "containers/container_info.h"
#include "cuda/cuda_state.h"
#include "exposition/exposition.h"

namespace neutracer {

// container (the name), container_id, runtime, pod_uid, namespace, pod, slurm_job; unknown ones
// left out. Also the container fields of /api/v1/processes.
Labels container_info_labels(const ContainerInfo &container);

// One sample (value 1) per distinct container id among the traced processes, by id.
MetricFamily container_info_family(const CudaState &state);

} // namespace neutracer
