#pragma once
// The benchmark driver: runs every scenario against one redis-server,
// prints the tables, writes the JSON and the chart data.
namespace fbench {

int driver_main(int argc, char** argv);

}  // namespace fbench
