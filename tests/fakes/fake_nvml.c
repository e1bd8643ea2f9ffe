// SPDX-License-Identifier: Apache-2.0
/* A stand-in for libnvidia-ml.so.1 with two fixed GPUs, built only for tests. It implements
 * the NVML functions the daemon calls (declared in daemon/nvml_abi.h) and checks their
 * arguments the way NVML does, so a wrong constant or buffer size fails a test. GPU 1 does not
 * support power readings or NVLink. Build-time switches model other drivers:
 *   FAKE_NVML_PROCESS_SYMBOL_V3 (1 or 0): export ..._v3 (current) or only ..._v2
 *   FAKE_NVML_PROCESS_STRIDE (24, 32 or 16): running-process entry layout
 *   FAKE_NVML_HAS_ENERGY (1 or 0): export nvmlDeviceGetTotalEnergyConsumption
 *   FAKE_NVML_HAS_REMAPPED_ROWS (1 or 0): export nvmlDeviceGetRemappedRows (Ampere's drivers on)
 *   FAKE_NVML_THROTTLE_SYMBOL (2, 1 or 0): the clock throttle mask as
 *     nvmlDeviceGetCurrentClocksEventReasons (R535 on), ...ThrottleReasons (older), or neither
 * The environment, read at each call, drives other behaviour:
 *   FAKE_NVML_INIT_RESULT: nvmlInit_v2 fails with that code
 *   FAKE_NVML_LOST_GPU: every value query on that GPU index answers NVML_ERROR_GPU_IS_LOST
 *   FAKE_NVML_ECC_UNCORRECTED: GPU 0's volatile uncorrected ECC count (aggregate: 10 more)
 *   FAKE_NVML_THROTTLE_REASONS: GPU 0's throttle mask (decimal or 0x hex)
 *   FAKE_NVML_REMAP_PENDING, FAKE_NVML_REMAP_FAILED (1): GPU 0's row remapping state
 *   FAKE_NVML_PROCESS_UTILIZATION: a file of per-process utilization samples, one a line:
 *     "GPU PID SM% MEMORY% [TIMESTAMP_US]" (no stamp: the wall clock at the call); re-read at
 *     each call, which answers the lines stamped after lastSeenTimeStamp (NOT_FOUND if none)
 *   FAKE_NVML_PROCESS_UTILIZATION_RESULT: nvmlDeviceGetProcessUtilization fails with that code
 *   FAKE_NVML_ACCOUNTING (1): accounting mode on GPU 0 (GPU 1's stays off); the processes in
 *     the utilization file on GPU 0 have records (their SM% and memory% as lifetime shares)
 * GPU 1 has no ECC (NOT_SUPPORTED); neither GPU supports retired-page status (Ampere and on). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under C11 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvml/nvml_abi.h"

#ifndef FAKE_NVML_PROCESS_SYMBOL_V3
#define FAKE_NVML_PROCESS_SYMBOL_V3 1
#endif
#ifndef FAKE_NVML_PROCESS_STRIDE
#define FAKE_NVML_PROCESS_STRIDE 24
#endif
#ifndef FAKE_NVML_HAS_ENERGY
#define FAKE_NVML_HAS_ENERGY 1
#endif
#ifndef FAKE_NVML_HAS_REMAPPED_ROWS
#define FAKE_NVML_HAS_REMAPPED_ROWS 1
#endif
#ifndef FAKE_NVML_THROTTLE_SYMBOL
#define FAKE_NVML_THROTTLE_SYMBOL 2
#endif

#define EXPORT __attribute__((visibility("default")))
#define SIGNATURE_CHECK static const __attribute__((unused))

struct nt_nvml_device_st {
  const char *uuid;
  const char *name;
  const char *bus_id;
  unsigned minor;
  nt_nvml_memory memory;
  nt_nvml_utilization utilization;
  unsigned temperature;
  int power_supported;
  unsigned power_milliwatts;
  unsigned long long energy_millijoules;
  unsigned pcie_tx_kib, pcie_rx_kib;
  int nvlink_supported;
  unsigned long long nvlink_tx_kib, nvlink_rx_kib;
  unsigned process_count;
  nt_nvml_process_v2 processes[3];
};

static struct nt_nvml_device_st devices[2] = {
    {"GPU-11111111-2222-3333-4444-555555555555",
     "Fake H100 80GB HBM3",
     "00000000:17:00.0",
     3,
     {85899345920ull, 83751862272ull, 2147483648ull},
     {75, 40},
     45,
     1,
     312500,
     123456789ull,
     1000,
     2000,
     1,
     5000ull,
     6000ull,
     2,
     {{4242, 536870912ull, 0xFFFFFFFFu, 0xFFFFFFFFu},
      {4343, NT_NVML_VALUE_NOT_AVAILABLE, 0xFFFFFFFFu, 0xFFFFFFFFu}}},
    {"GPU-66666666-7777-8888-9999-000000000000",
     "Fake A100-SXM4-40GB",
     "00000000:65:00.0",
     1,
     {42949672960ull, 42681237504ull, 268435456ull},
     {5, 1},
     52,
     0,
     0,
     42000ull,
     300,
     400,
     0,
     0ull,
     0ull,
     1,
     {{4242, 268435456ull, 0xFFFFFFFFu, 0xFFFFFFFFu}}},
};

static int init_depth;

static struct nt_nvml_device_st *checked(nt_nvml_device device) {
  if (device == &devices[0] || device == &devices[1])
    return device;
  return NULL;
}

/* The value of environment variable `name` (decimal or 0x hex), or `fallback`. */
static unsigned long long env_number(const char *name, unsigned long long fallback) {
  const char *text = getenv(name);
  return text != NULL && *text != '\0' ? strtoull(text, NULL, 0) : fallback;
}

static int is_lost(nt_nvml_device device) {
  const char *lost = getenv("FAKE_NVML_LOST_GPU");
  const int index = lost != NULL && *lost != '\0' ? atoi(lost) : -1;
  return index >= 0 && index < 2 && &devices[index] == device;
}

static int copy_string(const char *source, char *destination, unsigned int length) {
  if (destination == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(source) + 1 > length)
    return NT_NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(destination, source, strlen(source) + 1);
  return NT_NVML_SUCCESS;
}

/* Lets tests check that every successful init was shut down. */
EXPORT int fake_nvml_init_depth(void) { return init_depth; }

EXPORT int nvmlInit_v2(void) {
  const char *forced = getenv("FAKE_NVML_INIT_RESULT");
  if (forced != NULL)
    return atoi(forced);
  ++init_depth;
  return NT_NVML_SUCCESS;
}

EXPORT int nvmlShutdown(void) {
  if (init_depth == 0)
    return NT_NVML_ERROR_UNINITIALIZED;
  --init_depth;
  return NT_NVML_SUCCESS;
}

EXPORT int nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  if (init_depth == 0)
    return NT_NVML_ERROR_UNINITIALIZED;
  return copy_string("999.88.77", version, length);
}

EXPORT int nvmlDeviceGetCount_v2(unsigned int *count) {
  if (init_depth == 0)
    return NT_NVML_ERROR_UNINITIALIZED;
  *count = 2;
  return NT_NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nt_nvml_device *device) {
  if (init_depth == 0)
    return NT_NVML_ERROR_UNINITIALIZED;
  if (index >= 2 || device == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  *device = &devices[index];
  return NT_NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetUUID(nt_nvml_device device, char *uuid, unsigned int length) {
  if (!checked(device))
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  return copy_string(device->uuid, uuid, length);
}

EXPORT int nvmlDeviceGetName(nt_nvml_device device, char *name, unsigned int length) {
  if (!checked(device))
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  return copy_string(device->name, name, length);
}

EXPORT int nvmlDeviceGetPciInfo_v3(nt_nvml_device device, nt_nvml_pci_info *pci) {
  if (!checked(device) || pci == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  memset(pci, 0, sizeof *pci);
  strcpy(pci->bus_id_legacy, device->bus_id + 4); /* "0000:17:00.0" */
  strcpy(pci->bus_id, device->bus_id);
  pci->pci_device_id = 0x233010DEu;
  return NT_NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetMinorNumber(nt_nvml_device device, unsigned int *minor) {
  if (!checked(device) || minor == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  *minor = device->minor;
  return NT_NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetMemoryInfo(nt_nvml_device device, nt_nvml_memory *memory) {
  if (!checked(device) || memory == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  *memory = device->memory;
  return NT_NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetUtilizationRates(nt_nvml_device device, nt_nvml_utilization *rates) {
  if (!checked(device) || rates == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  *rates = device->utilization;
  return NT_NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetTemperature(nt_nvml_device device, int sensor, unsigned int *celsius) {
  if (!checked(device) || sensor != NT_NVML_TEMPERATURE_GPU || celsius == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  *celsius = device->temperature;
  return NT_NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetPowerUsage(nt_nvml_device device, unsigned int *milliwatts) {
  if (!checked(device) || milliwatts == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  if (!device->power_supported)
    return NT_NVML_ERROR_NOT_SUPPORTED;
  *milliwatts = device->power_milliwatts;
  return NT_NVML_SUCCESS;
}

#if FAKE_NVML_HAS_ENERGY
EXPORT int nvmlDeviceGetTotalEnergyConsumption(nt_nvml_device device,
                                               unsigned long long *millijoules) {
  if (!checked(device) || millijoules == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  *millijoules = device->energy_millijoules;
  return NT_NVML_SUCCESS;
}
#endif

EXPORT int nvmlDeviceGetPcieThroughput(nt_nvml_device device, int counter,
                                       unsigned int *kib_per_second) {
  if (!checked(device) || kib_per_second == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  if (counter == NT_NVML_PCIE_TX_BYTES)
    *kib_per_second = device->pcie_tx_kib;
  else if (counter == NT_NVML_PCIE_RX_BYTES)
    *kib_per_second = device->pcie_rx_kib;
  else
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  return NT_NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetFieldValues(nt_nvml_device device, int count, nt_nvml_field_value *values) {
  if (!checked(device) || count <= 0 || values == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  for (int i = 0; i < count; ++i) {
    nt_nvml_field_value *field = &values[i];
    const int is_nvlink_data = field->field_id == NT_NVML_FIELD_NVLINK_DATA_TX_KIB ||
                               field->field_id == NT_NVML_FIELD_NVLINK_DATA_RX_KIB;
    if (!is_nvlink_data || field->scope_id != NT_NVML_SCOPE_ALL_LINKS) {
      field->status = NT_NVML_ERROR_INVALID_ARGUMENT;
      continue;
    }
    if (!device->nvlink_supported) {
      field->status = NT_NVML_ERROR_NOT_SUPPORTED;
      continue;
    }
    field->status = NT_NVML_SUCCESS;
    field->value_type = NT_NVML_VALUE_UNSIGNED_LONG_LONG;
    field->value.as_ull = field->field_id == NT_NVML_FIELD_NVLINK_DATA_TX_KIB
                              ? device->nvlink_tx_kib
                              : device->nvlink_rx_kib;
  }
  return NT_NVML_SUCCESS;
}

/* Writes entries in the configured layout: pid and used memory first in every layout. */
static int running_processes(nt_nvml_device device, unsigned int *count, void *entries) {
  if (!checked(device) || count == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  const unsigned int needed = device->process_count;
  if (*count < needed) {
    *count = needed;
    return NT_NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (needed > 0 && entries == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned int i = 0; i < needed; ++i) {
    unsigned char *entry = (unsigned char *)entries + (size_t)i * FAKE_NVML_PROCESS_STRIDE;
    const nt_nvml_process_v2 *process = &device->processes[i];
#if FAKE_NVML_PROCESS_STRIDE == 16
    nt_nvml_process_v1 out = {process->pid, process->used_gpu_memory};
#elif FAKE_NVML_PROCESS_STRIDE == 24
    nt_nvml_process_v2 out = *process;
#elif FAKE_NVML_PROCESS_STRIDE == 32
    nt_nvml_process_v3_r535 out = {process->pid, process->used_gpu_memory, process->gpu_instance_id,
                                   process->compute_instance_id, 0};
#else
#error "FAKE_NVML_PROCESS_STRIDE must be 16, 24 or 32"
#endif
    memcpy(entry, &out, sizeof out);
  }
  *count = needed;
  return NT_NVML_SUCCESS;
}

#if FAKE_NVML_PROCESS_SYMBOL_V3
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(nt_nvml_device device, unsigned int *count,
                                                   void *entries) {
  return running_processes(device, count, entries);
}
#else
EXPORT int nvmlDeviceGetComputeRunningProcesses_v2(nt_nvml_device device, unsigned int *count,
                                                   void *entries) {
  return running_processes(device, count, entries);
}
#endif

EXPORT int nvmlDeviceGetTotalEccErrors(nt_nvml_device device, int error_type, int counter_type,
                                       unsigned long long *count) {
  if (!checked(device) || count == NULL ||
      (error_type != NT_NVML_MEMORY_ERROR_CORRECTED &&
       error_type != NT_NVML_MEMORY_ERROR_UNCORRECTED) ||
      (counter_type != NT_NVML_VOLATILE_ECC && counter_type != NT_NVML_AGGREGATE_ECC))
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  if (device != &devices[0])
    return NT_NVML_ERROR_NOT_SUPPORTED;
  const unsigned long long volatile_count =
      error_type == NT_NVML_MEMORY_ERROR_CORRECTED ? 7 : env_number("FAKE_NVML_ECC_UNCORRECTED", 0);
  *count = counter_type == NT_NVML_VOLATILE_ECC ? volatile_count : volatile_count + 10;
  return NT_NVML_SUCCESS;
}

#if FAKE_NVML_HAS_REMAPPED_ROWS
EXPORT int nvmlDeviceGetRemappedRows(nt_nvml_device device, unsigned int *corrected,
                                     unsigned int *uncorrected, unsigned int *pending,
                                     unsigned int *failed) {
  if (!checked(device) || corrected == NULL || uncorrected == NULL || pending == NULL ||
      failed == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  const int first = device == &devices[0];
  *corrected = first ? 2 : 0;
  *uncorrected = first ? 1 : 0;
  *pending = first ? (unsigned)env_number("FAKE_NVML_REMAP_PENDING", 0) : 0;
  *failed = first ? (unsigned)env_number("FAKE_NVML_REMAP_FAILED", 0) : 0;
  return NT_NVML_SUCCESS;
}
#endif

EXPORT int nvmlDeviceGetRetiredPagesPendingStatus(nt_nvml_device device, int *pending) {
  if (!checked(device) || pending == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  return NT_NVML_ERROR_NOT_SUPPORTED;
}

/* What nvmlDeviceGetProcessUtilization's NULL call says to allocate: a fixed size, as the
 * driver's (72 entries on an H100), larger than the lines a test writes. */
#define FAKE_NVML_UTILIZATION_BUFFER 16
#define FAKE_NVML_ACCOUNTING_MAX_MEMORY 805306368ull /* 768 MiB */

static int device_index(nt_nvml_device device) { return device == &devices[0] ? 0 : 1; }

static unsigned long long wall_clock_us(void) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return (unsigned long long)now.tv_sec * 1000000ull + (unsigned long long)now.tv_nsec / 1000ull;
}

/* Reads the samples of device `device` from the file named by FAKE_NVML_PROCESS_UTILIZATION into
 * `out` (at most `capacity`); returns how many there are, or -1 without a file. */
static int read_utilization(nt_nvml_device device, nt_nvml_process_utilization *out,
                            int capacity) {
  const char *path = getenv("FAKE_NVML_PROCESS_UTILIZATION");
  FILE *file = path != NULL && *path != '\0' ? fopen(path, "r") : NULL;
  if (file == NULL)
    return -1;
  const unsigned long long now = wall_clock_us();
  char line[256];
  int count = 0;
  while (count < capacity && fgets(line, sizeof line, file) != NULL) {
    int gpu = -1;
    unsigned pid = 0, sm = 0, memory = 0;
    unsigned long long stamp = 0;
    const int fields = sscanf(line, "%d %u %u %u %llu", &gpu, &pid, &sm, &memory, &stamp);
    if (fields < 4 || gpu != device_index(device))
      continue;
    nt_nvml_process_utilization sample = {pid, fields == 5 ? stamp : now, sm, memory, 0, 0};
    out[count++] = sample;
  }
  fclose(file);
  return count;
}

EXPORT int nvmlDeviceGetProcessUtilization(nt_nvml_device device,
                                           nt_nvml_process_utilization *samples,
                                           unsigned int *count, unsigned long long last_seen_us) {
  if (!checked(device) || count == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  const char *forced = getenv("FAKE_NVML_PROCESS_UTILIZATION_RESULT");
  if (forced != NULL && *forced != '\0')
    return atoi(forced);
  if (samples == NULL) {
    *count = FAKE_NVML_UTILIZATION_BUFFER;
    return NT_NVML_ERROR_INSUFFICIENT_SIZE;
  }
  nt_nvml_process_utilization all[FAKE_NVML_UTILIZATION_BUFFER];
  const int read = read_utilization(device, all, FAKE_NVML_UTILIZATION_BUFFER);
  unsigned int newer = 0;
  for (int i = 0; i < read; ++i)
    if (all[i].timestamp_us > last_seen_us) {
      if (newer == *count)
        return NT_NVML_ERROR_INSUFFICIENT_SIZE;
      samples[newer++] = all[i];
    }
  *count = newer;
  return newer > 0 ? NT_NVML_SUCCESS : NT_NVML_ERROR_NOT_FOUND;
}

static int accounting_on(nt_nvml_device device) {
  return device == &devices[0] && env_number("FAKE_NVML_ACCOUNTING", 0) == 1;
}

EXPORT int nvmlDeviceGetAccountingMode(nt_nvml_device device, int *mode) {
  if (!checked(device) || mode == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  *mode = accounting_on(device) ? NT_NVML_FEATURE_ENABLED : NT_NVML_FEATURE_DISABLED;
  return NT_NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetAccountingStats(nt_nvml_device device, unsigned int pid,
                                        nt_nvml_accounting_stats *stats) {
  if (!checked(device) || stats == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  if (!accounting_on(device))
    return NT_NVML_ERROR_NOT_FOUND; /* what R580 answers with accounting off */
  nt_nvml_process_utilization all[FAKE_NVML_UTILIZATION_BUFFER];
  const int read = read_utilization(device, all, FAKE_NVML_UTILIZATION_BUFFER);
  for (int i = 0; i < read; ++i)
    if (all[i].pid == pid) {
      memset(stats, 0, sizeof *stats);
      stats->gpu_utilization = all[i].sm_percent;
      stats->memory_utilization = all[i].memory_percent;
      stats->max_memory_usage = FAKE_NVML_ACCOUNTING_MAX_MEMORY;
      stats->start_time_us = all[i].timestamp_us;
      stats->is_running = 1;
      return NT_NVML_SUCCESS;
    }
  return NT_NVML_ERROR_NOT_FOUND;
}

#if FAKE_NVML_THROTTLE_SYMBOL
static int throttle_reasons(nt_nvml_device device, unsigned long long *reasons) {
  if (!checked(device) || reasons == NULL)
    return NT_NVML_ERROR_INVALID_ARGUMENT;
  if (is_lost(device))
    return NT_NVML_ERROR_GPU_IS_LOST;
  *reasons = device == &devices[0] ? env_number("FAKE_NVML_THROTTLE_REASONS", 0)
                                   : NT_NVML_THROTTLE_GPU_IDLE;
  return NT_NVML_SUCCESS;
}
#endif
#if FAKE_NVML_THROTTLE_SYMBOL == 2
EXPORT int nvmlDeviceGetCurrentClocksEventReasons(nt_nvml_device device,
                                                  unsigned long long *reasons) {
  return throttle_reasons(device, reasons);
}
#elif FAKE_NVML_THROTTLE_SYMBOL == 1
EXPORT int nvmlDeviceGetCurrentClocksThrottleReasons(nt_nvml_device device,
                                                     unsigned long long *reasons) {
  return throttle_reasons(device, reasons);
}
#endif

/* Each export has the signature the daemon casts its symbol to. */
SIGNATURE_CHECK nt_nvml_init_fn check_init = nvmlInit_v2;
SIGNATURE_CHECK nt_nvml_shutdown_fn check_shutdown = nvmlShutdown;
SIGNATURE_CHECK nt_nvml_driver_version_fn check_driver_version = nvmlSystemGetDriverVersion;
SIGNATURE_CHECK nt_nvml_device_count_fn check_count = nvmlDeviceGetCount_v2;
SIGNATURE_CHECK nt_nvml_handle_by_index_fn check_handle = nvmlDeviceGetHandleByIndex_v2;
SIGNATURE_CHECK nt_nvml_device_string_fn check_uuid = nvmlDeviceGetUUID;
SIGNATURE_CHECK nt_nvml_device_string_fn check_name = nvmlDeviceGetName;
SIGNATURE_CHECK nt_nvml_pci_info_fn check_pci = nvmlDeviceGetPciInfo_v3;
SIGNATURE_CHECK nt_nvml_device_uint_fn check_minor = nvmlDeviceGetMinorNumber;
SIGNATURE_CHECK nt_nvml_memory_fn check_memory = nvmlDeviceGetMemoryInfo;
SIGNATURE_CHECK nt_nvml_utilization_fn check_utilization = nvmlDeviceGetUtilizationRates;
SIGNATURE_CHECK nt_nvml_temperature_fn check_temperature = nvmlDeviceGetTemperature;
SIGNATURE_CHECK nt_nvml_device_uint_fn check_power = nvmlDeviceGetPowerUsage;
SIGNATURE_CHECK nt_nvml_pcie_throughput_fn check_pcie = nvmlDeviceGetPcieThroughput;
SIGNATURE_CHECK nt_nvml_field_values_fn check_fields = nvmlDeviceGetFieldValues;
SIGNATURE_CHECK nt_nvml_running_processes_fn check_processes = running_processes;
SIGNATURE_CHECK nt_nvml_total_ecc_errors_fn check_ecc = nvmlDeviceGetTotalEccErrors;
SIGNATURE_CHECK nt_nvml_process_utilization_fn check_process_utilization =
    nvmlDeviceGetProcessUtilization;
SIGNATURE_CHECK nt_nvml_accounting_mode_fn check_accounting_mode = nvmlDeviceGetAccountingMode;
SIGNATURE_CHECK nt_nvml_accounting_stats_fn check_accounting_stats = nvmlDeviceGetAccountingStats;
SIGNATURE_CHECK nt_nvml_retired_pages_pending_fn check_retired =
    nvmlDeviceGetRetiredPagesPendingStatus;
#if FAKE_NVML_HAS_REMAPPED_ROWS
SIGNATURE_CHECK nt_nvml_remapped_rows_fn check_remapped = nvmlDeviceGetRemappedRows;
#endif
#if FAKE_NVML_THROTTLE_SYMBOL
SIGNATURE_CHECK nt_nvml_throttle_reasons_fn check_throttle = throttle_reasons;
#endif
#if FAKE_NVML_HAS_ENERGY
SIGNATURE_CHECK nt_nvml_energy_fn check_energy = nvmlDeviceGetTotalEnergyConsumption;
#endif
