#pragma once
// The driver's scenarios (bench/README.md says what each measures): each
// runs against the Env's redis-server and records into its Report.
#include "env.h"

namespace fbench {

void scenario_A(Env& e);  // uncontended acquire+release (uncontended_pairs.cpp)
void scenario_B(Env& e);  // contended handoff on one lock (contended_handoff.cpp)
void scenario_C(Env& e);  // a semaphore of 4 (semaphore_order.cpp)
void scenario_D(Env& e);  // the scale of one queue (queue_scale.cpp)
void scenario_E(Env& e);  // many names (many_names.cpp)
void scenario_F(Env& e);  // heartbeat cost (heartbeat_cost.cpp)
void scenario_G(Env& e);  // wake transports (wake_transports.cpp)
void scenario_H(Env& e);  // asynchronous waits (async_waits.cpp)
void scenario_T(Env& e);  // TLS against plain TCP (tls_cost.cpp)

}  // namespace fbench
