"""Running a study: generate, run and score (resumable), the clients, dry run and scripted roles."""
