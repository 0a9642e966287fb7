print("replay: not yet")
