/* copy_desc.c: the names of copy_desc.h's values, as the summary and the log print them. */
#include "copy_desc.h"

const char *const host_kind_names[KIND_COUNT] = {"pageable", "pinned", "registered", "managed", "device", "unknown"};
const char *const copy_dir_names[DIR_COUNT] = {"h2d", "d2h", "d2d", "h2h", "peer"};
const char *const copy_action_names[ACTION_COUNT] = {"pass", "staged", "registered"};
const char *const unstaged_reason_names[UNSTAGED_COUNT] = {"none", "below the staging threshold", "2D/3D/batch copy",
                                                           "stream capture", "device side check", "no pinned memory",
                                                           "pool being allocated", "pool busy on other streams",
                                                           "forked child", "stage = off"};
