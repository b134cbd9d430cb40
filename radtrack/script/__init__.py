"""What runs inside the user's process: RADTBenchmark, code windows, bootstrap, env, params."""
