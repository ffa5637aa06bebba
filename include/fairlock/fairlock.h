#pragma once
// Umbrella header of the fairlock library.
#include "fairlock/async.h"
#include "fairlock/client.h"
#include "fairlock/errors.h"
#include "fairlock/fair_lock.h"
#include "fairlock/fair_semaphore.h"
#include "fairlock/options.h"
#include "fairlock/version.h"
