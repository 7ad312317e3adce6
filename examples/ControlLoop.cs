// ControlLoop: a plant controller structured like Listing 2 of the paper.
//
// A PI controller holds a simulated tank at its setpoint.  Its state (the
// controller, the plant model and a history of the last levels) is persistent:
// every period ends with SPC.SendPData(), so after a crash (kill -9) the next
// run restarts warm from the last period that was persisted.
//
//   spmono ControlLoop.exe [periods] [period-ms]
using System;
using System.Threading;
using SPersistence;

[SPersistent]
class Tank
{
	[SPersistentField] public double Level;       // metres
	[SPersistentField] public double Inflow;      // m/s, set by the controller

	public void Step (double dt)
	{
		const double outflowCoefficient = 0.05;
		Level = Math.Max (0, Level + (Inflow - outflowCoefficient * Math.Sqrt (Level)) * dt);
	}
}

[SPersistent]
class Controller
{
	[SPersistentField] public long Period;         // periods completed
	[SPersistentField] public double Setpoint;
	[SPersistentField] public double Integral;
	[SPersistentField] public Tank Plant;
	[SPersistentField] public double[] History;    // last levels, a ring
	[SPersistentField] public string Name;

	public void RunPeriod (double dt)
	{
		const double kp = 0.8, ki = 0.2;
		double error = Setpoint - Plant.Level;
		Integral += error * dt;
		Plant.Inflow = Math.Max (0, kp * error + ki * Integral);
		Plant.Step (dt);
		History [Period % History.Length] = Plant.Level;
		Period++;
	}
}

static class ControlLoop
{
	static int Main (string[] args)
	{
		long periods = args.Length > 0 ? long.Parse (args [0]) : long.MaxValue;
		int periodMs = args.Length > 1 ? int.Parse (args [1]) : 10;
		Controller c;

		// Initialization phase.
		if (!SPC.IsWarmRestart ()) {
			c = new Controller { Setpoint = 2.0, Plant = new Tank (), History = new double [64], Name = "tank-1" };
			SPC.AddRoot (c);                              // root id 1
			Console.WriteLine ("cold start");
		} else {
			c = (Controller)SPC.RecvPData (1);            // still root 1: no AddRoot needed
			Console.WriteLine ("warm restart: resuming after period {0} (level {1:F4})", c.Period, c.Plant.Level);
		}

		// Periodic operation phase.
		for (long i = 0; i < periods; i++) {
			c.RunPeriod (0.1);
			SPC.SendPData ();
			Console.WriteLine ("period {0} level {1:F4} persisted", c.Period, c.Plant.Level);
			if (periodMs > 0)
				Thread.Sleep (periodMs);
		}
		return 0;
	}
}
