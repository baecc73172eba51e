"""The oldest Linux driver of each CUDA runtime ((major, minor), driver; CUDA 11 and later: minor-version
compatibility, one row per major at minor 0): generated from matrix/facts/cuda_drivers.yaml by
`aiacc-build matrix driver-tables --write`. Do not edit."""

MIN_DRIVER = [((10, 0), '410.48'),
 ((10, 1), '418.39'),
 ((10, 2), '440.33'),
 ((11, 0), '450.80.02'),
 ((12, 0), '525.60.13'),
 ((13, 0), '580.65.06')]
