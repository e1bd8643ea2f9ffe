// SPDX-License-Identifier: Apache-2.0
/* The part of NVML's C interface (libnvidia-ml.so.1) the daemon calls, declared from NVIDIA's
 * public API reference: function signatures, return codes, constants and struct layouts. No
 * NVIDIA header is used. Valid C and C++: the test fake (tests/fakes/fake_nvml.c) implements
 * these same declarations. Type names are ours; layouts and numbers are NVML's ABI. */
#ifndef NEUTRACER_NVML_ABI_H
#define NEUTRACER_NVML_ABI_H

#include <assert.h>

#ifdef __cplusplus
extern "C" {
#endif

/* nvmlReturn_t values the daemon tells apart (it logs any other code by number). */
enum {
  NT_NVML_SUCCESS = 0,
  NT_NVML_ERROR_UNINITIALIZED = 1,
  NT_NVML_ERROR_INVALID_ARGUMENT = 2,
  NT_NVML_ERROR_NOT_SUPPORTED = 3,
  NT_NVML_ERROR_NO_PERMISSION = 4,
  NT_NVML_ERROR_NOT_FOUND = 6,
  NT_NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NT_NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NT_NVML_ERROR_TIMEOUT = 10,
  NT_NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NT_NVML_ERROR_GPU_IS_LOST = 15,
  NT_NVML_ERROR_UNKNOWN = 999
};

/* Buffer sizes NVML documents as always large enough. */
enum {
  NT_NVML_UUID_BUFFER_BYTES = 96,
  NT_NVML_NAME_BUFFER_BYTES = 96,
  NT_NVML_DRIVER_VERSION_BUFFER_BYTES = 80,
  NT_NVML_PCI_BUS_ID_BYTES = 32,
  NT_NVML_PCI_BUS_ID_LEGACY_BYTES = 16
};

enum { NT_NVML_TEMPERATURE_GPU = 0 };                          /* nvmlTemperatureSensors_t */
enum { NT_NVML_PCIE_TX_BYTES = 0, NT_NVML_PCIE_RX_BYTES = 1 }; /* nvmlPcieUtilCounter_t */
enum {
  NT_NVML_FIELD_NVLINK_DATA_TX_KIB = 138, /* cumulative payload, KiB */
  NT_NVML_FIELD_NVLINK_DATA_RX_KIB = 139
};
/* nvmlMemoryErrorType_t */
enum { NT_NVML_MEMORY_ERROR_CORRECTED = 0, NT_NVML_MEMORY_ERROR_UNCORRECTED = 1 };
/* nvmlEccCounterType_t: volatile since the driver was loaded, aggregate over the GPU's life */
enum { NT_NVML_VOLATILE_ECC = 0, NT_NVML_AGGREGATE_ECC = 1 };
/* nvmlClocksThrottleReason* (since R535 also named nvmlClocksEventReason*): bits of the mask
 * nvmlDeviceGetCurrentClocksThrottleReasons gives. */
#define NT_NVML_THROTTLE_GPU_IDLE 0x1ull
#define NT_NVML_THROTTLE_APPLICATIONS_CLOCKS_SETTING 0x2ull
#define NT_NVML_THROTTLE_SW_POWER_CAP 0x4ull
#define NT_NVML_THROTTLE_HW_SLOWDOWN 0x8ull
#define NT_NVML_THROTTLE_SYNC_BOOST 0x10ull
#define NT_NVML_THROTTLE_SW_THERMAL_SLOWDOWN 0x20ull
#define NT_NVML_THROTTLE_HW_THERMAL_SLOWDOWN 0x40ull
#define NT_NVML_THROTTLE_HW_POWER_BRAKE_SLOWDOWN 0x80ull
#define NT_NVML_THROTTLE_DISPLAY_CLOCK_SETTING 0x100ull
#define NT_NVML_SCOPE_ALL_LINKS 0xFFFFFFFFu /* scopeId that sums a link field over all links */
#define NT_NVML_VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFull /* usedGpuMemory when unknown */
#define NT_NVML_UINT_NOT_AVAILABLE 0xFFFFFFFFu /* the same for an unsigned int field */
enum { NT_NVML_FEATURE_DISABLED = 0, NT_NVML_FEATURE_ENABLED = 1 }; /* nvmlEnableState_t */

enum { /* nvmlValueType_t */
       NT_NVML_VALUE_DOUBLE = 0,
       NT_NVML_VALUE_UNSIGNED_INT = 1,
       NT_NVML_VALUE_UNSIGNED_LONG = 2,
       NT_NVML_VALUE_UNSIGNED_LONG_LONG = 3,
       NT_NVML_VALUE_SIGNED_LONG_LONG = 4,
       NT_NVML_VALUE_SIGNED_INT = 5
};

typedef struct nt_nvml_device_st *nt_nvml_device; /* nvmlDevice_t: opaque */

typedef struct { /* nvmlMemory_t (nvmlDeviceGetMemoryInfo, version 1) */
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nt_nvml_memory;

typedef struct { /* nvmlUtilization_t: percent of the last sample period */
  unsigned int gpu;
  unsigned int memory;
} nt_nvml_utilization;

typedef struct { /* nvmlPciInfo_t (filled by nvmlDeviceGetPciInfo_v2 and _v3) */
  char bus_id_legacy[NT_NVML_PCI_BUS_ID_LEGACY_BYTES];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[NT_NVML_PCI_BUS_ID_BYTES];
} nt_nvml_pci_info;

typedef union { /* nvmlValue_t */
  double as_double;
  unsigned int as_uint;
  unsigned long as_ulong;
  unsigned long long as_ull;
  long long as_sll;
  int as_sint;
} nt_nvml_value;

typedef struct { /* nvmlFieldValue_t */
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp_us;
  long long latency_us;
  int value_type; /* NT_NVML_VALUE_* */
  int status;     /* this field's nvmlReturn_t */
  nt_nvml_value value;
} nt_nvml_field_value;

/* Entries of nvmlDeviceGetComputeRunningProcesses. Drivers have written three layouts through
 * the _v2 and _v3 symbols; pid and used memory sit at the same offsets in all of them (see
 * nvml/nvml_process_layout.h). */
typedef struct { /* nvmlProcessInfo_v1_t */
  unsigned int pid;
  unsigned long long used_gpu_memory;
} nt_nvml_process_v1;
typedef struct { /* nvmlProcessInfo_v2_t (and nvmlProcessInfo_t since R550) */
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
} nt_nvml_process_v2;
typedef struct { /* what _v3 wrote on R535 drivers: v2 plus confidential-computing memory */
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
  unsigned long long used_gpu_cc_protected_memory;
} nt_nvml_process_v3_r535;

typedef struct { /* nvmlProcessUtilizationSample_t */
  unsigned int pid;
  unsigned long long timestamp_us; /* CPU timestamp: wall-clock microseconds (R580 on an H100) */
  unsigned int sm_percent;         /* SM busy share of the period since lastSeenTimeStamp */
  unsigned int memory_percent;     /* memory controller busy share of that period */
  unsigned int encoder_percent;
  unsigned int decoder_percent;
} nt_nvml_process_utilization;

typedef struct { /* nvmlAccountingStats_t */
  unsigned int gpu_utilization;    /* percent of the process's life; NT_NVML_UINT_NOT_AVAILABLE */
  unsigned int memory_utilization; /* likewise */
  unsigned long long max_memory_usage; /* bytes; NT_NVML_VALUE_NOT_AVAILABLE when unknown */
  unsigned long long time_ms;          /* context active time; 0 until the process ends */
  unsigned long long start_time_us;
  unsigned int is_running;
  unsigned int reserved[5];
} nt_nvml_accounting_stats;

static_assert(sizeof(nt_nvml_memory) == 24, "nvmlMemory_t is 24 bytes");
static_assert(sizeof(nt_nvml_pci_info) == 68, "nvmlPciInfo_t is 68 bytes");
static_assert(sizeof(nt_nvml_field_value) == 40, "nvmlFieldValue_t is 40 bytes");
static_assert(sizeof(nt_nvml_process_v1) == 16, "nvmlProcessInfo_v1_t is 16 bytes");
static_assert(sizeof(nt_nvml_process_v2) == 24, "nvmlProcessInfo_v2_t is 24 bytes");
static_assert(sizeof(nt_nvml_process_v3_r535) == 32, "R535's _v3 entry is 32 bytes");
static_assert(sizeof(nt_nvml_process_utilization) == 32,
              "nvmlProcessUtilizationSample_t is 32 bytes");
static_assert(sizeof(nt_nvml_accounting_stats) == 56, "nvmlAccountingStats_t is 56 bytes");

/* Signatures of the NVML functions the daemon resolves with dlsym. */
typedef int (*nt_nvml_init_fn)(void);     /* nvmlInit_v2 */
typedef int (*nt_nvml_shutdown_fn)(void); /* nvmlShutdown */
typedef int (*nt_nvml_driver_version_fn)(char *version, unsigned int length);
typedef int (*nt_nvml_device_count_fn)(unsigned int *count); /* nvmlDeviceGetCount_v2 */
typedef int (*nt_nvml_handle_by_index_fn)(unsigned int index, nt_nvml_device *device);
typedef int (*nt_nvml_device_string_fn)(nt_nvml_device device, char *text, unsigned int length);
typedef int (*nt_nvml_pci_info_fn)(nt_nvml_device device, nt_nvml_pci_info *pci);
typedef int (*nt_nvml_device_uint_fn)(nt_nvml_device device, unsigned int *value);
typedef int (*nt_nvml_memory_fn)(nt_nvml_device device, nt_nvml_memory *memory);
typedef int (*nt_nvml_utilization_fn)(nt_nvml_device device, nt_nvml_utilization *utilization);
typedef int (*nt_nvml_temperature_fn)(nt_nvml_device device, int sensor, unsigned int *celsius);
typedef int (*nt_nvml_energy_fn)(nt_nvml_device device, unsigned long long *millijoules);
typedef int (*nt_nvml_pcie_throughput_fn)(nt_nvml_device device, int counter,
                                          unsigned int *kib_per_second);
typedef int (*nt_nvml_field_values_fn)(nt_nvml_device device, int count,
                                       nt_nvml_field_value *values);
typedef int (*nt_nvml_total_ecc_errors_fn)(nt_nvml_device device, int error_type, int counter_type,
                                           unsigned long long *count);
/* nvmlDeviceGetRemappedRows (Ampere and later): rows remapped for corrected and uncorrected
 * errors, a remapping waiting for the next GPU reset, a remapping that failed. */
typedef int (*nt_nvml_remapped_rows_fn)(nt_nvml_device device, unsigned int *corrected_rows,
                                        unsigned int *uncorrected_rows, unsigned int *pending,
                                        unsigned int *failure_occurred);
/* nvmlDeviceGetRetiredPagesPendingStatus: *pending is an nvmlEnableState_t (0 or 1). */
typedef int (*nt_nvml_retired_pages_pending_fn)(nt_nvml_device device, int *pending);
typedef int (*nt_nvml_throttle_reasons_fn)(nt_nvml_device device, unsigned long long *reasons);
/* `entries` points to *count entries of the driver's layout; on NT_NVML_ERROR_INSUFFICIENT_SIZE
 * *count is set to the number needed. */
typedef int (*nt_nvml_running_processes_fn)(nt_nvml_device device, unsigned int *count,
                                            void *entries);
/* nvmlDeviceGetProcessUtilization: with samples NULL, NT_NVML_ERROR_INSUFFICIENT_SIZE and the
 * entries to allocate in *count; then one sample per process busy since last_seen_us, or
 * NT_NVML_ERROR_NOT_FOUND when none was. */
typedef int (*nt_nvml_process_utilization_fn)(nt_nvml_device device,
                                              nt_nvml_process_utilization *samples,
                                              unsigned int *count, unsigned long long last_seen_us);
/* nvmlDeviceGetAccountingMode: *mode is an nvmlEnableState_t. */
typedef int (*nt_nvml_accounting_mode_fn)(nt_nvml_device device, int *mode);
typedef int (*nt_nvml_accounting_stats_fn)(nt_nvml_device device, unsigned int pid,
                                           nt_nvml_accounting_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* NEUTRACER_NVML_ABI_H */
