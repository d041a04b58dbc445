"""The dataset: the taxonomy, personas, sparse preference profiles, tasks, rubrics, the folder."""
