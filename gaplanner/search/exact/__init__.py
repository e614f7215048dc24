"""The exact search (branch and bound over placements) and its reductions."""
