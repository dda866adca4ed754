/* ordinals.c: what the shim's device attribution relies on (shim/observe/ctxdev.h): cuDeviceGetCount
 * counts the ordinals 0..n-1 and every context, primary or created, reports its device's ordinal;
 * so in a process that sees one device every context is on device 0, and the shim need not ask the
 * driver which context is current on each copy. Runs with any number of devices; prints nothing
 * that depends on the count. */
#include "conform.h"

void case_devices_ordinals(void)
{
    int n = 0;
    say("count", "%s", rcs(d.device_count(&n)));
    say("count_at_least_one", "%s", n >= 1 ? "yes" : "no");
    if (!ex.ctx_get_device) {
        say("lookup", "absent");
        return;
    }
    int primaries = 1, created = 1;
    for (int i = 0; i < n; i++) {
        CUdevice dev, got = -1;
        CUcontext primary, own;
        NEED(d.device_get(&dev, i));
        NEED(d.primary_retain(&primary, dev));
        NEED(d.ctx_set(primary));
        NEED(ex.ctx_get_device(&got));
        primaries &= got == i;
        if (ex.ctx_create && ex.ctx_destroy) {
            NEED(ex.ctx_create(&own, 0, dev)); /* current from here */
            got = -1;
            NEED(ex.ctx_get_device(&got));
            created &= got == i;
            NEED(ex.ctx_destroy(own));
        }
    }
    say("primary_contexts_report_their_ordinal", "%s", primaries ? "yes" : "no");
    say("created_contexts_report_their_ordinal", "%s", created ? "yes" : "no");
    CUdevice past;
    say("device_past_count", "%s", rcs(d.device_get(&past, n)));
    /* no context current: the device is unknown to the driver (the shim counts such a copy as failed) */
    NEED(d.ctx_set(NULL));
    CUdevice none = -1;
    say("device_without_context", "%s", rcs(ex.ctx_get_device(&none)));
    NEED(d.ctx_set(ctx0));
}
