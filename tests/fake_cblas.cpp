// A deliberately wrong CBLAS for the tests of the wrong-result path: it ignores A*B and only
// scales C by beta. Loaded by the gemmlab program through GEMMLAB_OPENBLAS_LIBRARY=<this file>.
extern "C" {

void cblas_sgemm(int, int, int, int m, int n, int, float, const float*, int, const float*, int, float beta,
                 float* c, int ldc) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

void cblas_dgemm(int, int, int, int m, int n, int, double, const double*, int, const double*, int, double beta,
                 double* c, int ldc) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0 ? 0.0 : beta * c[i * ldc + j];
}

void openblas_set_num_threads(int) {}

const char* openblas_get_config() { return "fake CBLAS of the gemmlab tests (C = beta*C)"; }

}  // extern "C"
