// Package redistest gives tests a Redis to run against: the machine's
// shared test database, or a private redis-server process that a test can
// kill and restart.
//
// The shared database is named by RAGFUSE_TEST_REDIS_URL (default
// redis://127.0.0.1:6379/15). Tests that need it skip when it cannot be
// reached, unless RAGFUSE_REQUIRE_REDIS is set, in which case they fail.
// The database is flushed once per test run (the first test process to
// ask flushes it and leaves a marker for FlushMarkerTTL, so that packages
// tested in parallel do not flush each other's keys); each test then works
// under its own key prefix (Prefix). Log keeps what a store logs, for
// tests of its outage lines.
package redistest
