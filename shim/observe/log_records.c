/* log_records.c: the log's lines (see log.h for their fields): the header record, the driver
 * record, one transfer record per copy and the summary record. Each is appended to a jbuf as one
 * complete line; the writer writes it only if it fit. Everything but the driver record (which
 * asks the driver) and the summary's stats (vsnprintf) is async-signal-safe. */
#define _GNU_SOURCE
#include "log_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "advice.h"
#include "base/common.h"
#include "base/driver.h"
#include "base/real.h"
#include "callsite.h"
#include "logpath.h"
#include "pinshim.h"
#include "policy.h"
#include "stats.h"

#define LOG_FORMAT 1
#define TOP_SITES 20

void log_record_transfer(struct jbuf *jb, const struct log_rec *r, bool has_device_ns, uint64_t device_ns)
{
    jb_lit(jb, "{\"type\":\"transfer\",\"seq\":");
    jb_u64(jb, r->seq);
    jb_lit(jb, ",\"t_ns\":");
    jb_u64(jb, r->t_ns);
    jb_lit(jb, ",\"host_ns\":");
    jb_u64(jb, r->host_ns);
    jb_lit(jb, ",\"entry\":");
    jb_str(jb, driver_entries[r->entry].export_name);
    jb_lit(jb, ",\"dir\":");
    jb_str(jb, copy_dir_names[r->dir]);
    jb_lit(jb, ",\"bytes\":");
    jb_u64(jb, r->bytes);
    jb_lit(jb, ",\"src_kind\":");
    jb_str(jb, host_kind_names[r->src_kind]);
    jb_lit(jb, ",\"dst_kind\":");
    jb_str(jb, host_kind_names[r->dst_kind]);
    jb_lit(jb, ",\"host_kind\":");
    jb_str(jb, host_kind_names[r->host_kind]);
    jb_lit(jb, r->async ? ",\"async\":true,\"stream\":" : ",\"async\":false,\"stream\":");
    jb_raw(jb, "\"", 1);
    jb_hex(jb, r->stream);
    jb_lit(jb, "\",\"device\":");
    if (r->device >= 0)
        jb_i64(jb, r->device);
    else
        jb_lit(jb, "null");
    jb_lit(jb, ",\"action\":");
    jb_str(jb, copy_action_names[r->action]);
    jb_lit(jb, ",\"tid\":");
    jb_i64(jb, r->tid);
    jb_lit(jb, ",");
    callsite_json_fields(jb, r->site);
    if (has_device_ns) {
        jb_lit(jb, ",\"device_ns\":");
        jb_u64(jb, device_ns);
    }
    jb_lit(jb, "}\n");
}

static void header_cmdline(struct jbuf *jb)
{
    char args[8192];
    ssize_t n = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, args, sizeof args - 1);
        close(fd);
    }
    if (n < 0)
        n = 0;
    args[n] = '\0';
    jb_lit(jb, "[");
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(args + i) + 1) {
        if (i)
            jb_lit(jb, ",");
        jb_str(jb, args + i);
    }
    jb_lit(jb, "]");
}

static void header_policy(struct jbuf *jb)
{
    char text[8192];
    policy_format(&pinshim_policy, text, sizeof text);
    jb_lit(jb, "{");
    bool first = true;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *eq = strstr(line, " = ");
        if (eq) {
            *eq = '\0';
            jb_key(jb, line, first);
            jb_str(jb, eq + 3);
            first = false;
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    jb_lit(jb, "}");
}

void log_record_header(struct jbuf *jb, const struct log_process *p)
{
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown-host");
    host[sizeof host - 1] = '\0';
    jb_lit(jb, "{\"type\":\"header\",\"format\":");
    jb_u64(jb, LOG_FORMAT);
    jb_lit(jb, ",\"tool\":\"pinshim\",\"version\":");
    jb_str(jb, PINSHIM_VERSION);
    jb_lit(jb, ",\"pid\":");
    jb_i64(jb, getpid());
    jb_lit(jb, ",\"ppid\":");
    jb_i64(jb, getppid());
    jb_lit(jb, ",\"host\":");
    jb_str(jb, host);
    jb_lit(jb, ",\"rank\":");
    jb_str(jb, logpath_rank());
    jb_lit(jb, ",\"cmdline\":");
    header_cmdline(jb);
    jb_lit(jb, ",\"start_wall_ns\":");
    jb_u64(jb, p->start_wall_ns);
    jb_lit(jb, ",\"start_mono_ns\":");
    jb_u64(jb, p->start_mono_ns);
    jb_lit(jb, ",\"policy\":");
    header_policy(jb);
    jb_lit(jb, "}\n");
}

typedef CUresult (*fn_driver_version)(int *);
typedef CUresult (*fn_device_count)(int *);
typedef CUresult (*fn_device_get)(CUdevice *, int);
typedef CUresult (*fn_device_name)(char *, int, CUdevice);

bool log_record_driver(struct jbuf *jb)
{
    fn_driver_version version = (fn_driver_version)real_driver_symbol("cuDriverGetVersion");
    fn_device_count count = (fn_device_count)real_driver_symbol("cuDeviceGetCount");
    fn_device_get get = (fn_device_get)real_driver_symbol("cuDeviceGet");
    fn_device_name name = (fn_device_name)real_driver_symbol("cuDeviceGetName");
    if (!version || !count || !get || !name)
        return false;
    int v = 0, n = 0;
    pinshim_enter();
    jb_lit(jb, "{\"type\":\"driver\",\"driver_version\":");
    if (version(&v) == CUDA_SUCCESS)
        jb_i64(jb, v);
    else
        jb_lit(jb, "null");
    jb_lit(jb, ",\"devices\":[");
    if (count(&n) != CUDA_SUCCESS)
        n = 0;
    for (int i = 0; i < n && i < 64; i++) {
        CUdevice dev;
        char text[256] = "";
        if (get(&dev, i) != CUDA_SUCCESS || name(text, sizeof text, dev) != CUDA_SUCCESS)
            snprintf(text, sizeof text, "?");
        text[sizeof text - 1] = '\0';
        if (i)
            jb_lit(jb, ",");
        jb_str(jb, text);
    }
    pinshim_leave();
    jb_lit(jb, "]}\n");
    return true;
}

/* The summary record: stats' JSON summary object with "type" first and the log's fields last. */
bool log_record_summary(struct jbuf *jb, bool may_wait)
{
    static char stats_json[96 * 1024];
    size_t n = stats_summary_json(stats_json, sizeof stats_json, may_wait);
    if (n < 3 || stats_json[0] != '{' || stats_json[n - 1] != '\n' || stats_json[n - 2] != '}')
        return false;
    jb_lit(jb, "{\"type\":\"summary\",");
    jb_raw(jb, stats_json + 1, n - 3); /* without the braces and the newline */
    jb_lit(jb, ",\"dropped\":");
    jb_u64(jb, log_ring_lost());
    jb_lit(jb, ",\"sites\":");
    callsite_json_top(jb, TOP_SITES);
    jb_lit(jb, ",\"advice\":");
    advice_json(jb);
    jb_lit(jb, "}\n");
    return true;
}
