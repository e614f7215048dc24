"""Plans: the plan types, their verification, plan files, capacity answers and reports."""
