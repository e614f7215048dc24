"""The problem a search solves: blocks, lifetimes or conflicts, bounds, memories, pools; reading inputs."""
