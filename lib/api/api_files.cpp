// Model files: see include/snn.h, "Model files and checkpoints".
