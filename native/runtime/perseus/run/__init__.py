"""perseusrun: starts the processes of an AIACC-Training job (Gloo mode: locally and over ssh; --mpi: through
Open MPI's mpirun), gives every rank its launch variables, fails fast and prefixes every output line."""
