/* A ScaLAPACK program, as users write them, for redblue's ScaLAPACK library: it calls
 * pdgemm_, pdgetrf_, pdpotrf_, pdgetrs_, pdpotrs_, pdgesv_, pdposv_ (timed; the last two also checked) on
 * block-cyclic arrays it allocates itself. Run it under mpirun with and without the library
 * preloaded:
 *
 *   driver time ROUTINE N NB REPS P Q            one warm-up, then REPS timed calls; rank 0
 *                                                prints "time ROUTINE SECONDS" per call;
 *                                                ROUTINE is gemm, getrf, potrf, or getrs or
 *                                                potrs (16 right-hand sides, with the factors
 *                                                of one untimed pdgetrf_ or pdpotrf_ call),
 *                                                or gesv or posv (16 right-hand sides;
 *                                                DRIVER_NRHS=K in the environment for K);
 *                                                potrf-u, potrs-u, posv-u: UPLO = U;
 *                                                getrs-t: TRANS = T; gemm-t: TRANSA = T
 *   driver check N NB P Q [R|C]                  solves with pdgesv_ and pdposv_ on a grid
 *                                                of that order (R, row-major, by default) and
 *                                                prints "check ROUTINE RESIDUAL ok|FAILED"
 *
 * The matrices are the same in every run: entry (i, j) is a hash of i and j in [-1, 1), plus
 * 2N on the diagonal for the positive definite one.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void Cblacs_pinfo(int *me, int *np);
extern void Cblacs_get(int ctxt, int what, int *val);
extern void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
extern void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
extern void Cblacs_gridexit(int ctxt);
extern void Cblacs_exit(int cont);
extern int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *np);
extern void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
                      const int *rsrc, const int *csrc, const int *ctxt, const int *lld, int *info);
extern void pdgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
                    const double *alpha, const double *a, const int *ia, const int *ja,
                    const int *desca, const double *b, const int *ib, const int *jb,
                    const int *descb, const double *beta, double *c, const int *ic,
                    const int *jc, const int *descc);
extern void pdgetrf_(const int *m, const int *n, double *a, const int *ia, const int *ja,
                     const int *desca, int *ipiv, int *info);
extern void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia, const int *ja,
                     const int *desca, int *info);
extern void pdgetrs_(const char *trans, const int *n, const int *nrhs, const double *a,
                     const int *ia, const int *ja, const int *desca, const int *ipiv, double *b,
                     const int *ib, const int *jb, const int *descb, int *info, int trans_len);
extern void pdpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a,
                     const int *ia, const int *ja, const int *desca, double *b, const int *ib,
                     const int *jb, const int *descb, int *info, int uplo_len);
extern void pdgesv_(const int *n, const int *nrhs, double *a, const int *ia, const int *ja,
                    const int *desca, int *ipiv, double *b, const int *ib, const int *jb,
                    const int *descb, int *info);
extern void pdposv_(const char *uplo, const int *n, const int *nrhs, double *a, const int *ia,
                    const int *ja, const int *desca, double *b, const int *ib, const int *jb,
                    const int *descb, int *info);

static int me, nprow, npcol, myrow, mycol, ctxt;

/* Entry (i, j) in [-1, 1): a hash of the indices and a seed. */
static double value(long i, long j, unsigned seed) {
  unsigned long long h = (unsigned long long)i * 0x9E3779B97F4A7C15ull ^
                         (unsigned long long)j * 0xC2B2AE3D27D4EB4Full ^ seed;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return (double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* A local array of the m x n matrix f in nb x nb blocks, with its descriptor. */
typedef struct {
  int m, n, nb, locr, locc, desc[9];
  double *a;
} Matrix;

static Matrix matrix(int m, int n, int nb) {
  Matrix x = {m, n, nb, 0, 0, {0}, NULL};
  int zero = 0, info;
  x.locr = numroc_(&m, &nb, &myrow, &zero, &nprow);
  x.locc = numroc_(&n, &nb, &mycol, &zero, &npcol);
  int lld = x.locr > 1 ? x.locr : 1;
  descinit_(x.desc, &m, &n, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
  x.a = malloc(sizeof(double) * (size_t)lld * (size_t)(x.locc > 0 ? x.locc : 1));
  return x;
}

/* Fills x with entries of seed `seed` (symmetric, 2N on the diagonal when spd). */
static void fill(Matrix *x, unsigned seed, int spd) {
  int lld = x->desc[8];
  for (int lj = 0; lj < x->locc; lj++) {
    long j = ((long)(lj / x->nb) * npcol + mycol) * x->nb + lj % x->nb;
    for (int li = 0; li < x->locr; li++) {
      long i = ((long)(li / x->nb) * nprow + myrow) * x->nb + li % x->nb;
      double v = spd ? (i >= j ? value(i, j, seed) : value(j, i, seed)) : value(i, j, seed);
      if (spd && i == j) v = 2.0 * x->n;
      x->a[li + (size_t)lj * lld] = v;
    }
  }
}

static double now(void) {
  MPI_Barrier(MPI_COMM_WORLD);
  return MPI_Wtime();
}

static int timed(const char *name, int n, int nb, int reps) {
  /* potrf-u, potrs-u, posv-u: the upper triangle (UPLO = U) */
  char routine[16];
  snprintf(routine, sizeof routine, "%s", name);
  size_t len = strlen(routine);
  const char *uplo = "L", *trans = "N";
  if (len > 2 && strcmp(routine + len - 2, "-u") == 0) {
    routine[len - 2] = 0;
    uplo = "U";
  } else if (len > 2 && strcmp(routine + len - 2, "-t") == 0) {
    routine[len - 2] = 0;
    trans = "T";
  }
  Matrix a = matrix(n, n, nb), b = matrix(n, n, nb), c = matrix(n, n, nb);
  int one = 1, info = 0, nrhs = 16;
  const char *k = getenv("DRIVER_NRHS");
  if (k != NULL && atoi(k) > 0)
    nrhs = atoi(k);
  int *ipiv = malloc(sizeof(int) * (size_t)(a.locr + nb));
  double alpha = 1.0, beta = 0.0;
  int spd = strcmp(routine, "potrf") == 0 || strcmp(routine, "potrs") == 0 ||
            strcmp(routine, "posv") == 0;
  int solve = strcmp(routine, "getrs") == 0 || strcmp(routine, "potrs") == 0;
  int factor_and_solve = strcmp(routine, "gesv") == 0 || strcmp(routine, "posv") == 0;
  Matrix x = matrix(n, nrhs, nb);
  fill(&b, 2, 0);
  if (solve) {
    fill(&a, 1, spd);
    if (spd)
      pdpotrf_(uplo, &n, a.a, &one, &one, a.desc, &info);
    else
      pdgetrf_(&n, &n, a.a, &one, &one, a.desc, ipiv, &info);
    if (info != 0) {
      if (me == 0) fprintf(stderr, "%s: the factorisation's info = %d\n", routine, info);
      return 1;
    }
  }
  for (int rep = 0; rep <= reps; rep++) {
    if (solve || factor_and_solve)
      fill(&x, 7, 0);
    if (!solve)
      fill(&a, 1, spd);
    double t = now();
    if (strcmp(routine, "getrs") == 0) {
      pdgetrs_(trans, &n, &nrhs, a.a, &one, &one, a.desc, ipiv, x.a, &one, &one, x.desc, &info, 1);
    } else if (strcmp(routine, "potrs") == 0) {
      pdpotrs_(uplo, &n, &nrhs, a.a, &one, &one, a.desc, x.a, &one, &one, x.desc, &info, 1);
    } else if (strcmp(routine, "gesv") == 0) {
      pdgesv_(&n, &nrhs, a.a, &one, &one, a.desc, ipiv, x.a, &one, &one, x.desc, &info);
    } else if (strcmp(routine, "posv") == 0) {
      pdposv_(uplo, &n, &nrhs, a.a, &one, &one, a.desc, x.a, &one, &one, x.desc, &info);
    } else if (strcmp(routine, "gemm") == 0) {
      pdgemm_(trans, "N", &n, &n, &n, &alpha, a.a, &one, &one, a.desc, b.a, &one, &one, b.desc,
              &beta, c.a, &one, &one, c.desc);
    } else if (strcmp(routine, "getrf") == 0) {
      pdgetrf_(&n, &n, a.a, &one, &one, a.desc, ipiv, &info);
    } else if (spd) {
      pdpotrf_(uplo, &n, a.a, &one, &one, a.desc, &info);
    } else {
      if (me == 0) fprintf(stderr, "unknown routine %s\n", routine);
      return 2;
    }
    t = now() - t;
    if (info != 0) {
      if (me == 0) fprintf(stderr, "%s: info = %d\n", routine, info);
      return 1;
    }
    if (me == 0 && rep > 0) printf("time %s %.6f\n", name, t);
  }
  return 0;
}

/* max |A·X − B| / (max |A| · max |X| · N · eps), A and B regenerated from their seeds. */
static double residual(int n, int nrhs, int nb, unsigned seed_a, int spd, Matrix *x) {
  Matrix a = matrix(n, n, nb), r = matrix(n, nrhs, nb);
  int one = 1;
  double alpha = 1.0, minus = -1.0;
  fill(&a, seed_a, spd);
  fill(&r, 7, 0);
  pdgemm_("N", "N", &n, &nrhs, &n, &alpha, a.a, &one, &one, a.desc, x->a, &one, &one, x->desc,
          &minus, r.a, &one, &one, r.desc);
  double mine[3] = {0, 0, 0}, all[3];
  for (int k = 0; k < r.desc[8] * r.locc; k++) mine[0] = fmax(mine[0], fabs(r.a[k]));
  for (int k = 0; k < a.desc[8] * a.locc; k++) mine[1] = fmax(mine[1], fabs(a.a[k]));
  for (int k = 0; k < x->desc[8] * x->locc; k++) mine[2] = fmax(mine[2], fabs(x->a[k]));
  MPI_Allreduce(mine, all, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return all[0] / (all[1] * all[2] * n * 2.220446049250313e-16);
}

static int check(int n, int nb) {
  int one = 1, info = 0, nrhs = 3, failed = 0;
  const char *names[2] = {"gesv", "posv"};
  for (int k = 0; k < 2; k++) {
    Matrix a = matrix(n, n, nb), x = matrix(n, nrhs, nb);
    int *ipiv = malloc(sizeof(int) * (size_t)(a.locr + nb));
    fill(&a, 1, k == 1);
    fill(&x, 7, 0);
    if (k == 0)
      pdgesv_(&n, &nrhs, a.a, &one, &one, a.desc, ipiv, x.a, &one, &one, x.desc, &info);
    else
      pdposv_("L", &n, &nrhs, a.a, &one, &one, a.desc, x.a, &one, &one, x.desc, &info);
    double res = info == 0 ? residual(n, nrhs, nb, 1, k == 1, &x) : INFINITY;
    int ok = info == 0 && res < 10.0;
    failed |= !ok;
    if (me == 0) printf("check %s info %d residual %.3g %s\n", names[k], info, res, ok ? "ok" : "FAILED");
  }
  return failed;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int np;
  Cblacs_pinfo(&me, &np);
  int timing = argc == 8 && strcmp(argv[1], "time") == 0;
  int checking = (argc == 6 || argc == 7) && strcmp(argv[1], "check") == 0;
  const char *order = argc == 7 ? argv[6] : "R";
  if (!timing && !checking) {
    if (me == 0)
      fprintf(stderr, "usage: driver time gemm|getrf|potrf|getrs|potrs|gesv|posv N NB REPS P Q | driver check N NB P Q [R|C]\n");
    MPI_Finalize();
    return 2;
  }
  int base = timing ? 3 : 2;
  int n = atoi(argv[base]), nb = atoi(argv[base + 1]);
  int p = atoi(argv[base + (timing ? 3 : 2)]), q = atoi(argv[base + (timing ? 4 : 3)]);
  Cblacs_get(-1, 0, &ctxt);
  Cblacs_gridinit(&ctxt, timing ? "R" : order, p, q);
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  int rc = 0;
  if (myrow >= 0) {
    rc = timing ? timed(argv[2], n, nb, atoi(argv[5])) : check(n, nb);
    Cblacs_gridexit(ctxt);
  }
  Cblacs_exit(1);
  MPI_Finalize();
  return rc;
}
