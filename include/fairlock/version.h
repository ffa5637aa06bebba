#pragma once
// The version has one source: project(VERSION) in CMakeLists.txt must match.
#define FAIRLOCK_VERSION_MAJOR 0
#define FAIRLOCK_VERSION_MINOR 1
#define FAIRLOCK_VERSION_PATCH 0
#define FAIRLOCK_VERSION_STRING "0.1.0"
