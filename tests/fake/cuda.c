/* Stands for the NVIDIA driver's CUDA library (libcuda.so.1) in a test trainer's memory maps:
 * a process that has it loaded is one that can wait on a GPU. Its one entry point answers as
 * cuInit does when the driver starts (CUDA_SUCCESS); nothing calls it. */
int cuInit(unsigned int flags) {
    (void)flags;
    return 0;
}
