#pragma once
// The driver's scenarios (bench/README.md says what each measures): each
// runs against the Env's redis-server and records into its Report.
#include "env.h"

namespace fbench {

void scenario_A(Env& e);  // uncontended acquire+release (scenario_a.cpp)
void scenario_B(Env& e);  // contended handoff on one lock (scenario_b.cpp)
void scenario_C(Env& e);  // a semaphore of 4 (scenario_c.cpp)
void scenario_D(Env& e);  // the scale of one queue (scenario_d.cpp)
void scenario_E(Env& e);  // many names (scenario_e.cpp)
void scenario_F(Env& e);  // heartbeat cost (scenario_f.cpp)
void scenario_G(Env& e);  // wake transports (scenario_g.cpp)
void scenario_H(Env& e);  // asynchronous waits (scenario_h.cpp)
void scenario_T(Env& e);  // TLS against plain TCP (scenario_t.cpp)

}  // namespace fbench
