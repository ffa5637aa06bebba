#pragma once
#include <stdexcept>
#include <string>

namespace fairlock {

// Base of every error the library reports about Redis or a grant.
// Bad arguments are reported with std::invalid_argument naming the argument.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The server could not be reached, or the connection broke mid-command.
class ConnectionError : public Error {
 public:
  using Error::Error;
};

// A command, or a wait with a deadline, ran out of time.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// The server answered with an error (wrong type, permission denied, a
// script's documented error such as a malformed argument).
class ServerError : public Error {
 public:
  using Error::Error;
};

// Clients disagree on the number of permits of one name.
class PermitsMismatch : public ServerError {
 public:
  using ServerError::ServerError;
};

// The grant is gone: its lease expired, it was evicted or its keys deleted.
// (release() reports this as Released::lost; unlock() never throws.)
class LockLost : public Error {
 public:
  using Error::Error;
};

// A blocked lock() was cancelled (FairLock::cancel, Client::shutdown).
class Cancelled : public Error {
 public:
  using Error::Error;
};

}  // namespace fairlock
