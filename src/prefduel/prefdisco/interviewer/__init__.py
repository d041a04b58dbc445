"""The Bayesian interviewer: a discovery strategy that chooses each question by information gain."""
