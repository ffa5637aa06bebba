#pragma once
// FairSemaphore is declared beside FairLock (a lock is a semaphore of 1).
#include "fairlock/fair_lock.h"
