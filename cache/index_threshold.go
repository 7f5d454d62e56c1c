package cache

// thresholdSigmas is the safety margin of a thresholded search, in binomial
// standard deviations of the sketch distance at the threshold's angle. A
// vector at cosine c to the query differs from it in each sketch bit with
// probability p = arccos(c)/π, so its sketch distance has mean sketchBits·p
// and standard deviation sqrt(sketchBits·p·(1−p)); a vector at least as
// similar as the threshold lies farther than the mean at the threshold plus
// this margin only in the far tail of that distribution (at cosine 0.92:
// mean 33 of 256 bits, deviation 5.3, bound 66, where unrelated vectors at
// cosine 0.5 lie at 85 on average). TestSketchBoundMargin measures the tail
// on pairs at or above a threshold: over 238k pairs at cosine >= 0.85 none
// came closer to the bound than 4.2 deviations past the threshold's mean.
const thresholdSigmas = 6

// thresholdBound returns the sketch distance beyond which a search with
// minimum similarity minSim neither scores nor returns a vector.
func thresholdBound(minSim float32) int {
	return hammingBound(minSim, thresholdSigmas)
}
